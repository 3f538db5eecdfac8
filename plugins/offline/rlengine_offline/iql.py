"""Implicit Q-learning (``iql``, Kostrikov, Nair & Levine 2021, "Offline Reinforcement Learning with Implicit
Q-Learning"), for Box actions.

IQL never asks the critics about an action the dataset does not hold. Three networks learn from the
same sampled transitions ``(s, a, r, s')``:

* a state-value network ``V`` fit by **expectile regression** to the target critics at the dataset's
  action: ``L_V = mean |tau - 1(u < 0)| u^2`` with ``u = min(Q1, Q2)_target(s, a) - V(s)``. With
  ``expectile`` ``tau`` above 0.5, a positive residual weighs more than a negative one, so ``V``
  leans toward the better actions the data shows (``tau = 0.5`` is the mean: SARSA's value);
* twin critics fit toward ``r + gamma (1 - terminal) V(s')``, their targets Polyak-averaged;
* the actor by **advantage-weighted regression**: it maximises ``exp(beta (Q_target(s, a) - V(s)))``
  (clipped at ``max_weight``) times the log-likelihood of the dataset's action.

The actor is the paper's for MuJoCo: a Gaussian with a state-independent learnt std whose mean is the
tanh of the MLP's output, in the ``[-1, 1]`` units of :class:`~rlengine_algorithms.twin_critics.ActionScale`.
The dataset's action is scored by the Gaussian itself, not squashed (a tanh-squashed density would
need the inverse tanh of actions on the bounds); ``predict`` takes the mean, ``rollout`` a sample clipped
to the bounds. The three losses are taken from one pass with the same weights, each network stepping
on its own loss (the authors' code steps V, then the actor, then the critics in turn); the critics'
encoder is trained by the critics' loss only, and V reads its features.
"""

from __future__ import annotations

from typing import NamedTuple

import attrs
import tensorflow as tf
from rlengine_algorithms.critics import (
    StackedMLP,
    Transition,
    target_encoder,
    trainable_of,
    variables_of,
    weighted_mean,
)
from rlengine_algorithms.exploration import HALF_LOG_2PI
from rlengine_algorithms.optimizers import FusedAdam
from rlengine_algorithms.twin_critics import ActorCriticOffPolicyConfig, TwinCriticAlgorithm

import rlengine
from rlengine import LossInfo, PolicyStep
from rlengine_offline.plugin import refuse_discrete

_v = attrs.validators
#: bounds of the actor's log std (the paper's policy: at most e^2, at least e^-10)
LOG_STD_MIN, LOG_STD_MAX = -10.0, 2.0


@attrs.define(kw_only=True)
class IQLConfig(ActorCriticOffPolicyConfig):
    """Options of ``iql`` (TOML section ``[iql]``), with the paper's defaults, on top of the replay ones."""

    actor_lr: float = attrs.field(default=3e-4, validator=_v.gt(0))  # Adam step size of the actor
    critic_lr: float = attrs.field(default=3e-4, validator=_v.gt(0))  # Adam step size of the twin critics
    value_lr: float = attrs.field(default=3e-4, validator=_v.gt(0))  # Adam step size of the value network V
    tau: float = attrs.field(default=0.005, validator=[_v.gt(0), _v.le(1)])  # Polyak rate of the target critics
    #: the value's expectile of the target critics: a positive residual Q - V weighs this, a negative one
    #: 1 - this; 0.5 is the mean (SARSA's value), toward 1 the best action the data shows
    expectile: float = attrs.field(default=0.7, validator=[_v.gt(0), _v.lt(1)])
    #: inverse temperature of the actor's weights exp(beta * (Q - V)); 0: behaviour cloning
    beta: float = attrs.field(default=3.0, validator=_v.ge(0))
    max_weight: float = attrs.field(default=100.0, validator=_v.gt(0))  # the actor's weights are clipped here


def expectile_loss(residual, expectile: float):
    """``|expectile - 1(residual < 0)| residual^2`` per row: asymmetric least squares of ``target - V``."""
    weight = tf.where(residual < 0, 1.0 - expectile, expectile)
    return weight * tf.square(residual)


class IQLInfo(NamedTuple):
    q: tf.Tensor  # [2, B] critics at the dataset's action
    target: tf.Tensor  # [B] r + discount * V(s')
    value: tf.Tensor  # [B] V(s)
    target_q: tf.Tensor  # [B] min of the target critics at the dataset's action
    log_prob: tf.Tensor  # [B] the actor's log-likelihood of the dataset's action
    mask: tf.Tensor  # [B]


class IQL(TwinCriticAlgorithm):
    config_class = IQLConfig

    def __init__(self, time_step_spec, action_spec, config):
        refuse_discrete("iql", action_spec)
        super().__init__(time_step_spec, action_spec, config)
        act, hidden = self.scale.size, config.hidden_sizes
        critic_features = self.critic_encoder.output_size
        self.actor = StackedMLP(1, self.actor_encoder.output_size, hidden, act, 0.01, name="actor",
                                hidden_matmul_dtype=config.hidden_matmul_dtype)
        self.log_std = tf.Variable(tf.zeros([act]), name="log_std")  # state-independent, as the paper's
        self.critic = StackedMLP(2, critic_features + act, hidden, 1, 1.0, name="critic",
                                 hidden_matmul_dtype=config.hidden_matmul_dtype)
        self.value = StackedMLP(1, critic_features, hidden, 1, 1.0, name="value",
                                hidden_matmul_dtype=config.hidden_matmul_dtype)
        self.target_critic = self.critic.copy("target_critic")
        self.target_critic_encoder = target_encoder(self, self.critic_encoder, "target_critic_encoder")
        # The critic side owns a shared encoder (its optimizer, its target); the actor side owns only its own.
        actor_parts = [self.actor] if self.shared_encoder else [self.actor, self.actor_encoder]
        critic_parts = [self.critic, self.critic_encoder]
        self.optimizers = [
            (FusedAdam(config.actor_lr, jit_compile=False), trainable_of(actor_parts) + [self.log_std]),
            (FusedAdam(config.critic_lr, jit_compile=False), trainable_of(critic_parts)),
            (FusedAdam(config.value_lr, jit_compile=False), trainable_of([self.value])),
        ]
        self.targets = [(variables_of([self.target_critic, self.target_critic_encoder]), variables_of(critic_parts))]
        self.target_tau = config.tau

    def _mean(self, features):
        """The actor's mean in [-1, 1] units."""
        return tf.tanh(self.actor(features)[0])

    def _log_std(self):
        return tf.clip_by_value(self.log_std, LOG_STD_MIN, LOG_STD_MAX)

    def predict(self, time_step, state) -> PolicyStep:
        return PolicyStep(self.scale.to_env(self._mean(self.actor_encoder(time_step.observation))), state, ())

    def rollout(self, time_step, state) -> PolicyStep:
        mean = self._mean(self.actor_encoder(time_step.observation))
        noise = tf.random.stateless_normal(tf.shape(mean), rlengine.random.seed())
        return PolicyStep(self.scale.to_env(tf.clip_by_value(mean + tf.exp(self._log_std()) * noise, -1, 1)),
                          state, ())

    def train_step(self, batch: Transition, state) -> PolicyStep:
        obs, critic_obs, action = self.encoded(batch)
        q = tf.squeeze(self.critic(tf.concat([critic_obs, action], -1)), -1)
        value = tf.squeeze(self.value(critic_obs), [0, -1])
        log_std = self._log_std()
        standardised = (action - self._mean(obs)) / tf.exp(log_std)
        log_prob = tf.reduce_sum(-0.5 * tf.square(standardised) - log_std - HALF_LOG_2PI, -1)
        target_q, target = self._targets(batch, critic_obs, action)
        return PolicyStep((), state, IQLInfo(q, target, value, target_q, log_prob, batch.mask))

    def _targets(self, batch: Transition, critic_obs, action):
        """``(min of the target critics at (s, a), r + discount * V(s'))``, both held constant."""
        if self.target_critic_encoder is not self.critic_encoder:  # else the critics' features are the target's
            critic_obs = self.target_critic_encoder(batch.observation)
        target_q = tf.reduce_min(tf.squeeze(self.target_critic(tf.concat([critic_obs, action], -1)), -1), 0)
        next_value = tf.squeeze(self.value(self.critic_encoder(batch.next_observation)), [0, -1])
        return tf.stop_gradient(target_q), tf.stop_gradient(batch.reward + batch.discount * next_value)

    def train_complete(self, tape, info: IQLInfo, weight=None):
        cfg = self.config
        with tape:
            advantage = tf.stop_gradient(info.target_q - info.value)
            awr_weight = tf.minimum(tf.exp(cfg.beta * advantage), cfg.max_weight)
            actor_loss = -weighted_mean(awr_weight * info.log_prob, info.mask, weight)
            td = info.q - info.target
            critic_loss = weighted_mean(tf.reduce_sum(tf.square(td), 0), info.mask, weight)
            value_loss = weighted_mean(expectile_loss(info.target_q - info.value, cfg.expectile), info.mask, weight)
        # One gradient per loss, each reaching only its own optimizer's variables (same order).
        grads_and_vars = []
        for loss, (_, variables) in zip((actor_loss, critic_loss, value_loss), self.optimizers):
            grads_and_vars += zip(tape.gradient(loss, variables, unconnected_gradients="zero"), variables)
        terms = {"actor": actor_loss, "critic": critic_loss, "value": value_loss}
        diagnostics = {"q": weighted_mean(info.q[0], info.mask), "v": weighted_mean(info.value, info.mask),
                       "advantage": weighted_mean(advantage, info.mask),
                       "awr_weight": weighted_mean(awr_weight, info.mask),
                       "std": tf.reduce_mean(tf.exp(self._log_std()))}
        priority = tf.reduce_mean(tf.abs(td), 0) * info.mask if self.prioritized_replay else ()
        return LossInfo(actor_loss + critic_loss + value_loss, terms, priority, diagnostics), grads_and_vars
