"""``graph-counting``: the testing kit's ``counting`` environment written as a graph environment.

Same observations, actions, rewards and episode ends as :class:`rlengine.testing.kit.CountingEnv`
(observation ``[t, env_id]``, action 0/1, reward ``1 + action``, terminated at ``episode_length``),
so a test can run one task through both kinds of environment and compare.
"""

from __future__ import annotations

import tensorflow as tf

from rlengine.api.data import StepType, TimeStep
from rlengine.api.graph_environment import GraphEnvironment
from rlengine.testing.kit import CountingConfig, CountingEnv

__all__ = ["GraphCountingEnv"]


class GraphCountingEnv(GraphEnvironment):
    """``counting`` in TensorFlow: its state is each copy's step count ``t``."""

    config_class = CountingConfig

    def __init__(self, env_id, num_envs, seed=0, first_env_id=0, config=None):
        super().__init__(env_id, num_envs, seed, first_env_id, config or CountingConfig())
        self.ids = tf.range(first_env_id, first_env_id + num_envs, dtype=tf.int32)

    def time_step_spec(self):
        return CountingEnv.time_step_spec(self)

    def action_spec(self):
        return CountingEnv.action_spec(self)

    def state_spec(self):
        return {"t": tf.TensorSpec([], tf.int32)}

    def reset(self, seed):
        t = tf.zeros([self.num_envs], tf.int32)
        zeros = tf.zeros([self.num_envs], tf.float32)
        return {"t": t}, self._time_step(t, tf.zeros_like(t), zeros, zeros + 1, tf.zeros_like(t))

    def step(self, state, action):
        restart = state["t"] >= self.config.episode_length
        t = tf.where(restart, 0, state["t"] + 1)
        last = t >= self.config.episode_length
        step_type = tf.where(restart, StepType.FIRST, tf.where(last, StepType.LAST, StepType.MID))
        reward = tf.where(restart, 0.0, 1.0 + tf.cast(action, tf.float32))
        discount = tf.where(last, 0.0, 1.0)
        return {"t": t}, self._time_step(t, step_type, reward, discount, tf.where(restart, 0, action))

    def _time_step(self, t, step_type, reward, discount, action):
        observation = tf.cast(tf.stack([t, self.ids], axis=1), tf.float32)
        return TimeStep(tf.cast(step_type, tf.int32), reward, discount, observation, action, self.ids)
