"""REINFORCE with a learned value baseline, for Discrete actions. Rows follow the engine's convention:
``reward[t + 1]`` and ``discount[t + 1]`` belong to the transition out of row ``t``; a LAST row starts
no transition (a reset follows), so it has no loss."""

import attrs
import tensorflow as tf
import tensorflow_probability as tfp
import tf_keras

from rlengine import Algorithm, ConfigError, LossInfo, PolicyStep, StepType


@attrs.define(kw_only=True)
class ReinforceConfig:  # TOML section [reinforce]
    hidden_size: int = attrs.field(default=64, validator=attrs.validators.gt(0))  # both tanh layers of each network
    learning_rate: float = attrs.field(default=1e-3, validator=attrs.validators.gt(0))  # Adam, policy and baseline
    #: discount of future rewards, per step
    gamma: float = attrs.field(default=0.99, validator=[attrs.validators.ge(0), attrs.validators.le(1)])
    entropy_coef: float = attrs.field(default=0.0, validator=attrs.validators.ge(0))  # exploration bonus


def mlp(hidden_size: int, outputs: int) -> tf_keras.Sequential:
    dense = tf_keras.layers.Dense
    return tf_keras.Sequential([dense(hidden_size, "tanh"), dense(hidden_size, "tanh"), dense(outputs)])


def discounted_returns(reward, discount, step_type, value, gamma: float):
    """Monte-Carlo returns of rows ``0..T-1`` of ``[T + 1, B]`` rows. Not whole episodes: CartPole's last
    500 steps, so unrolls holding whole ones would make updates rare. An episode still running at the
    unroll's end, or cut by a time limit (discount 1 on its LAST row), is completed with the baseline's
    ``value``; a terminated one (discount 0) is not."""
    def earlier(later, row):  # later: the return of row t + 1
        r, d, last, v = row
        return r + gamma * d * tf.where(last, v, later)  # a LAST row's own return would cross a reset

    rows = (reward[1:], discount[1:], step_type[1:] == StepType.LAST, value[1:])
    return tf.scan(earlier, rows, initializer=value[-1], reverse=True)


class Reinforce(Algorithm):
    """One gradient step per unroll on ``-log_prob * (return - baseline)`` plus the baseline's squared error."""

    config_class = ReinforceConfig

    def __init__(self, time_step_spec, action_spec, config):
        super().__init__(time_step_spec, action_spec, config)
        if tf.nest.is_nested(action_spec) or not action_spec.dtype.is_integer or action_spec.shape.rank != 0:
            raise ConfigError(f"algorithm 'reinforce' supports Discrete actions, not {action_spec}; "
                              "choose an environment with a Discrete action space")
        self.offset = int(action_spec.minimum)  # the policy's outputs count actions from 0
        self.policy = mlp(config.hidden_size, int(action_spec.maximum) - self.offset + 1)
        self.baseline = mlp(config.hidden_size, 1)
        self.optimizer = tf_keras.optimizers.Adam(config.learning_rate)

    def _dist(self, observation):
        return tfp.distributions.Categorical(logits=self.policy(observation), dtype=self.action_spec.dtype)

    def predict(self, time_step, state):  # greedy: evaluation and play
        return PolicyStep(self._dist(time_step.observation).mode() + self.offset, state, ())

    def rollout(self, time_step, state):  # sampled: collection
        return PolicyStep(self._dist(time_step.observation).sample() + self.offset, state, ())

    def preprocess_experience(self, exp):
        value = tf.squeeze(self.baseline(exp.observation), -1)  # as during collection: no update since
        ret = discounted_returns(exp.reward, exp.discount, exp.step_type, value, self.config.gamma)
        mask = tf.cast(exp.step_type[:-1] != StepType.LAST, tf.float32)
        rows = tf.nest.map_structure(lambda t: t[:-1], exp._replace(rollout_info=()))
        return rows._replace(rollout_info={"ret": ret, "advantage": ret - value[:-1], "mask": mask})

    def train_step(self, exp, state):  # runs under the core's tape
        dist, value = self._dist(exp.observation), tf.squeeze(self.baseline(exp.observation), -1)
        return PolicyStep((), state, {**exp.rollout_info, "log_prob": dist.log_prob(exp.action - self.offset),
                                      "entropy": dist.entropy(), "value": value})

    def train_complete(self, tape, info, weight=None):
        with tape:
            def mean(x):  # over the rows that start a real transition
                return tf.reduce_sum(x * info["mask"]) / tf.maximum(tf.reduce_sum(info["mask"]), 1.0)

            # Normalised advantages make the policy's step size independent of the returns' scale.
            advantage = info["advantage"] - mean(info["advantage"])
            advantage /= tf.sqrt(mean(tf.square(advantage))) + 1e-8
            losses = {"policy": -mean(info["log_prob"] * advantage), "entropy": mean(info["entropy"]),
                      "baseline": mean(tf.square(info["ret"] - info["value"]))}
            loss = losses["policy"] + losses["baseline"] - self.config.entropy_coef * losses["entropy"]
        grads = tape.gradient(loss, self.trainable_variables)
        return LossInfo(loss, losses), list(zip(grads, self.trainable_variables))
