"""Advantage actor-critic (A2C) with GAE; PPO subclasses it.

Rows follow the engine's convention: ``reward[t + 1]`` and
``discount[t + 1]`` belong to the transition out of row ``t``. A row whose
step is LAST starts no real transition (the environment resets after it),
so it carries no loss; nor does a FIRST row followed by another FIRST (a
multi-agent game's finished agent, waiting for the game to end).

Observations go through the registered encoder the config names (one for
actor and critic unless ``share_encoder = false``), then the optional LSTM
and the actor and critic MLPs. An ``action_mask`` observation leaf masks the
Categorical's logits wherever the policy is evaluated (rollout, predict,
train-time recomputation).

``predict`` runs the actor alone, and so does ``rollout`` without an LSTM:
the critic's values of an unroll's ``T + 1`` rows are then taken in
``preprocess_experience``, in one pass before the unroll's updates: in the
synchronous pipelines the weights that acted, so the same values a critic
per env step would give (to float rounding), at a fraction of the cost; in
the asynchronous and Ray pipelines the learner's weights of the moment
rather than the acting policy's older ones (the critic being trained judges
the returns). With an LSTM a value needs the state of its step, so
``rollout`` takes it.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import attrs
import tensorflow as tf
import tf_keras

import rlengine
from rlengine import Algorithm, ConfigError, Experience, LossInfo, PolicyStep, StepType, action_mask_of
from rlengine_algorithms.central_critic import central_encoders
from rlengine_algorithms.masking import mask_spec, refuse_mask
from rlengine_algorithms.networks import ActionHead, Torso, dense, positive_sizes
from rlengine_algorithms.optimizers import FusedAdam

_pos = attrs.validators.gt(0)
_unit = attrs.validators.and_(attrs.validators.ge(0), attrs.validators.le(1))
_schedules = attrs.validators.in_(["constant", "linear"])


@attrs.define(kw_only=True)
class ActorCriticConfig:
    """Options of ``ac`` (TOML section ``[ac]``); PPO adds its own on top."""

    #: registered encoder that turns observations into features, options in its own section ([nature_cnn], ...)
    encoder: str = attrs.field(default="flatten", validator=attrs.validators.instance_of(str))
    #: one encoder for actor and critic; false: each its own (needs lstm_size = 0)
    share_encoder: bool = True
    #: MAPPO's centralised critic: the critic reads the observation's global_state (and agent_id) leaves, the
    #: actor the others (rlengine_algorithms.central_critic; needs lstm_size = 0)
    central_critic: bool = False
    #: MLP widths of actor and critic after the encoder, each > 0 ([]: no hidden layer; with a CNN encoder
    #: set [], as its last dense layer is the torso, like SB3's CnnPolicy)
    hidden_sizes: list = attrs.field(factory=lambda: [64, 64], validator=positive_sizes)
    #: nonlinearity of the hidden layers of both MLPs
    activation: str = attrs.field(default="tanh", validator=attrs.validators.in_(["tanh", "relu", "elu"]))
    lstm_size: int = attrs.field(default=0, validator=attrs.validators.ge(0))  # 0: no LSTM
    learning_rate: float = attrs.field(default=7e-4, validator=_pos)  # step size at the start (lr_schedule)
    #: "adam" (epsilon 1e-5), or "rmsprop" as SB3's A2C (rho 0.99, epsilon 1e-5 outside the square root)
    optimizer: str = attrs.field(default="adam", validator=attrs.validators.in_(["adam", "rmsprop"]))
    lr_schedule: str = attrs.field(default="constant", validator=_schedules)  # linear: decays to 0 by the run's end
    gamma: float = attrs.field(default=0.99, validator=_unit)  # discount of future rewards, per step
    #: GAE lambda; 1: Monte-Carlo returns bootstrapped at the unroll's end, 0: one-step TD
    gae_lambda: float = attrs.field(default=1.0, validator=_unit)
    value_coef: float = attrs.field(default=0.5, validator=attrs.validators.ge(0))  # weight of the squared value error
    entropy_coef: float = attrs.field(default=0.0, validator=attrs.validators.ge(0))  # weight of the entropy bonus
    max_grad_norm: float = attrs.field(default=0.5, validator=_pos)  # global-norm clipping
    normalize_advantages: bool = False  # standardise advantages per minibatch (mean 0, std 1)
    num_epochs: int = attrs.field(default=1, validator=_pos)  # passes over each unroll's rows
    #: rows per update (with an LSTM: env copies, each a whole sequence); 0: the whole unroll in one update
    mini_batch_size: int = attrs.field(default=0, validator=attrs.validators.ge(0))
    init_log_std: float = 0.0  # initial log std of Gaussian policies


class RolloutInfo(NamedTuple):
    dist: object  # action distribution (stored as parameters)
    value: tf.Tensor | tuple  # the critic's value with an LSTM; () without (preprocess_experience takes them)


class BatchInfo(NamedTuple):
    """Rollout info after preprocessing: what the loss needs of collection time."""

    old_log_prob: tf.Tensor
    old_value: tf.Tensor
    advantage: tf.Tensor
    ret: tf.Tensor
    mask: tf.Tensor  # 1 where the row starts a real transition
    #: the whole batch's explained variance, repeated on every row: minibatches see only some rows,
    #: and the diagnostic (as SB3 and CleanRL report it) is of the batch, once per iteration
    explained_variance: tf.Tensor


class TrainInfo(NamedTuple):
    dist: object  # recomputed distribution
    value: tf.Tensor
    action: tf.Tensor
    batch: BatchInfo


class LinearDecay(tf_keras.optimizers.schedules.LearningRateSchedule):
    """``initial * (1 - progress)``, where progress is the run's fraction done."""

    def __init__(self, initial: float, progress: tf.Variable, linear: bool):
        self.initial, self.progress, self.linear = initial, progress, linear

    def __call__(self, step):
        return self.initial * (1.0 - self.progress) if self.linear else tf.constant(self.initial)

    def get_config(self):
        return {"initial": self.initial, "linear": self.linear}


def gae(reward, discount, step_type, value, gamma: float, lam: float):
    """Advantages and returns of rows ``0..T-1`` from ``[T + 1, B]`` rows."""
    next_value, next_reward, next_discount = value[1:], reward[1:], discount[1:]
    delta = next_reward + gamma * next_discount * next_value - value[:-1]
    # After a LAST row comes a reset: the advantage must not flow across it.
    carries = tf.cast(step_type[1:] != StepType.LAST, tf.float32) * gamma * lam * next_discount

    def step(acc, xs):
        d, c = xs
        return d + c * acc

    advantage = tf.scan(step, (delta, carries), initializer=tf.zeros_like(delta[0]), reverse=True)
    return advantage, advantage + value[:-1]


def explained_variance(ret, value, mask):
    """``1 - Var[ret - value] / Var[ret]`` over the rows where ``mask`` is 1.

    1: the values predict the returns exactly; 0: no better than the returns' mean; below 0: worse.
    NaN when the returns do not vary (undefined, as in SB3 and CleanRL).
    """
    count = tf.maximum(tf.reduce_sum(mask), 1.0)

    def variance(x):
        centred = x - tf.reduce_sum(x * mask) / count
        return tf.reduce_sum(tf.square(centred) * mask) / count

    var_ret = variance(ret)
    return tf.where(var_ret > 0, 1.0 - tf.math.divide_no_nan(variance(ret - value), var_ret), float("nan"))


class ActorCritic(Algorithm):
    """A2C: one gradient step per batch on policy-gradient + value + entropy losses."""

    config_class = ActorCriticConfig

    def __init__(self, time_step_spec, action_spec, config):
        super().__init__(time_step_spec, action_spec, config)
        self.num_epochs = config.num_epochs
        self.mini_batch_size = config.mini_batch_size
        self.needs_time_dimension = bool(config.lstm_size)
        name = type(self).__name__.lower()
        self.head = ActionHead(action_spec, name, config.init_log_std)
        if self.head.discrete:
            mask_spec(time_step_spec.observation, name, self.head.num_actions)
        else:
            refuse_mask(time_step_spec.observation, name)
        self.torso = Torso(*self._encoders(config, name), config.hidden_sizes, config.lstm_size, config.activation)
        self.value_head = dense(1, 1.0, "value")
        lr = LinearDecay(config.learning_rate, self.progress, config.lr_schedule == "linear")
        if config.optimizer == "rmsprop":
            # Keras adds epsilon inside the square root, torch (SB3) outside: sqrt(v + 1e-10) stands for sqrt(v) + 1e-5
            self.optimizer = tf_keras.optimizers.RMSprop(lr, rho=0.99, epsilon=1e-10)
        else:
            self.optimizer = FusedAdam(lr, epsilon=1e-5)

    def _encoders(self, config, name: str) -> tuple:
        """The actor's (or shared) encoder and the critic's own one, or None when shared."""
        if not config.share_encoder and config.lstm_size:
            raise ConfigError(f"{name}.share_encoder = false needs lstm_size = 0 (the LSTM feeds both actor and "
                              f"critic from one encoder); set share_encoder = true or lstm_size = 0")
        if config.central_critic:
            return central_encoders(self, config, name)
        encoder = self.make_encoder(config.encoder)
        if config.share_encoder or not encoder.variables:  # an encoder without variables is the same function
            return encoder, None
        return encoder, self.make_encoder(config.encoder, scope="critic_encoder")

    @property
    def state_spec(self):
        return self.torso.state_spec

    def _evaluate(self, observation, state):
        actor, critic, state = self.torso(observation, state)
        return self.head(actor, action_mask_of(observation)), tf.squeeze(self.value_head(critic), -1), state

    def _policy(self, observation, state):
        """``(action distribution, state)``: the actor alone, for acting."""
        # The first call builds the critic as well, so the layers are built in the order they always were
        # and a seed draws the same initial weights.
        if self.value_head.w is None:
            dist, _, state = self._evaluate(observation, state)
            return dist, state
        actor, state = self.torso.actor_features(observation, state)
        return self.head(actor, action_mask_of(observation)), state

    def _values(self, observation):
        """Values of ``[T + 1, B]`` observations in one pass (no LSTM: rows are independent)."""
        rows = tf.nest.map_structure(lambda x: tf.reshape(x, [-1, *x.shape[2:]]), observation)
        value = tf.squeeze(self.value_head(self.torso.critic_features(rows)), -1)
        return tf.stop_gradient(tf.reshape(value, tf.shape(tf.nest.flatten(observation)[0])[:2]))

    def predict(self, time_step, state) -> PolicyStep:
        dist, state = self._policy(time_step.observation, state)
        return PolicyStep(self.head.offset_action(dist.mode()), state, ())

    def rollout(self, time_step, state) -> PolicyStep:
        # without an LSTM, preprocess_experience takes the values (see the module's docstring)
        if self.needs_time_dimension:
            dist, value, state = self._evaluate(time_step.observation, state)
        else:
            (dist, state), value = self._policy(time_step.observation, state), ()
        action = self.head.offset_action(dist.sample(seed=rlengine.random.seed()))
        return PolicyStep(action, state, RolloutInfo(dist, value))

    def preprocess_experience(self, exp: Experience) -> Experience:
        cfg = self.config
        info: RolloutInfo = exp.rollout_info
        value = info.value if self.needs_time_dimension else self._values(exp.observation)
        advantage, ret = gae(exp.reward, exp.discount, exp.step_type, value, cfg.gamma, cfg.gae_lambda)
        rows = tf.nest.map_structure(lambda t: t[:-1], exp._replace(rollout_info=()))
        old_log_prob = info.dist.log_prob(self.head.unoffset_action(exp.action))[:-1]
        # Neither a LAST row nor a FIRST row followed by another FIRST (a finished agent's row of a multi-agent
        # game, waiting for its game's end: docs/multi-agent.md) starts a transition.
        waiting = (exp.step_type[:-1] == StepType.FIRST) & (exp.step_type[1:] == StepType.FIRST)
        mask = tf.cast((exp.step_type[:-1] != StepType.LAST) & ~waiting, tf.float32)
        # with the values the advantages were computed with, before this batch's updates
        ev = tf.fill(tf.shape(mask), explained_variance(ret, value[:-1], mask))
        return rows._replace(rollout_info=BatchInfo(old_log_prob, value[:-1], advantage, ret, mask, ev))

    def train_step(self, exp: Experience, state) -> PolicyStep:
        dist, value, state = self._evaluate(exp.observation, state)
        return PolicyStep((), state, TrainInfo(dist, value, self.head.unoffset_action(exp.action), exp.rollout_info))

    def policy_loss(self, log_prob, advantage, batch: BatchInfo):
        """Per-row policy loss and per-row diagnostics; PPO replaces it with the clipped surrogate."""
        return -log_prob * advantage, {}

    def value_loss(self, value, batch: BatchInfo):
        return tf.square(batch.ret - value)

    def train_complete(self, tape, info: TrainInfo, weight: Optional[tf.Tensor] = None):
        cfg, batch = self.config, info.batch
        with tape:
            mask = batch.mask if weight is None else batch.mask * weight
            denom = tf.maximum(tf.reduce_sum(mask), 1.0)

            def mean(x):
                return tf.reduce_sum(x * mask) / denom

            advantage = batch.advantage
            if cfg.normalize_advantages:
                centred = advantage - mean(advantage)
                advantage = centred / (tf.sqrt(mean(tf.square(centred))) + 1e-8)
            log_prob = info.dist.log_prob(info.action)
            pg, per_row = self.policy_loss(log_prob, advantage, batch)
            policy_loss, value_loss = mean(pg), mean(self.value_loss(info.value, batch))
            entropy = mean(info.dist.entropy())
            loss = policy_loss + cfg.value_coef * value_loss
            if cfg.entropy_coef:  # at 0 the entropy is only reported: its gradient would be taken, then zeroed
                loss -= cfg.entropy_coef * entropy
        variables = self.trainable_variables
        grads = tape.gradient(loss, variables)
        grads, norm = tf.clip_by_global_norm(grads, cfg.max_grad_norm)
        terms = {"policy": policy_loss, "value": value_loss, "entropy": entropy}
        diagnostics = {"explained_variance": tf.reduce_mean(batch.explained_variance), "value": mean(info.value),
                       "grad_norm": norm, "learning_rate": self.optimizer.learning_rate,
                       **{k: mean(v) for k, v in per_row.items()}}
        return LossInfo(loss, terms, diagnostics=diagnostics), list(zip(grads, variables))
