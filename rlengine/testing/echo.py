"""Testing kit for the asynchronous pipeline: an environment that checks every action it gets.

``echo`` (environment) observes ``[env_id, t]`` per copy. ``echo``
(algorithm) answers with the action ``[env_id, t, state]``, where its
policy state counts the steps since the episode began. So when every
request reaches the right actor, every answer the right env thread and
every policy state the right copy, the action a copy receives is exactly
``[its id, its t, its t]``; anything else raises in ``step``::

    Engine(config, extra_plugins=[("testing", testing_plugin()), ("echo", echo_plugin())])

Settings (``[echo]`` for either): ``episode_length``, ``max_delay`` (seconds
of random sleep per step, to shuffle the threads' order) and
``env_fails_at_step`` (the env raises at its that-many-th batched step) and
``policy_fails_at_step`` (the rollout fails once a copy reaches that step of
an episode); 0: never. With ``env_fails_once`` a recreated environment (same
config, same copies) does not fail again.
"""

from __future__ import annotations

import time

import attrs
import numpy as np
import tensorflow as tf

from rlengine import hookimpl
from rlengine.api import Algorithm
from rlengine.api.data import LossInfo, PolicyStep, StepType, TimeStep
from rlengine.testing.kit import CountingEnv
from rlengine.testing.pixels import advance_episodes


@attrs.define
class EchoConfig:
    episode_length: int = attrs.field(default=5, validator=attrs.validators.gt(1))
    max_delay: float = attrs.field(default=0.0, validator=attrs.validators.ge(0))
    env_fails_at_step: int = attrs.field(default=0, validator=attrs.validators.ge(0))
    policy_fails_at_step: int = attrs.field(default=0, validator=attrs.validators.ge(0))
    env_fails_once: bool = False  # each env thread's env fails once only, not again once recreated


class EchoEnv(CountingEnv):
    """Raises if a copy ever receives an action computed for another copy or another step.

    The clock, the copies' ids and the specs are ``counting``'s; the observation is ``[env_id, t]``.
    """

    config_class = EchoConfig  # type: ignore[assignment]  # counting's clock, with echo's own keys

    def __init__(self, env_id, num_envs, seed, first_env_id=0, config=None):
        super().__init__(env_id, num_envs, seed, first_env_id, config or EchoConfig())
        self.steps = 0  # batched steps taken, for fail_at_step
        self.checked = 0  # actions verified
        self.rng = np.random.default_rng(seed + first_env_id)

    def action_spec(self):
        return tf.TensorSpec([3], tf.int32)

    def _echo(self, step_type, action):
        obs = np.stack([self.ids, self.t], axis=1).astype(np.float32)
        last = step_type == StepType.LAST
        return TimeStep(step_type.astype(np.int32), np.ones(self.num_envs, np.float32),
                        np.where(last, 0.0, 1.0).astype(np.float32), obs, action.astype(np.int32), self.ids.copy())

    def reset(self):
        self.t[:] = 0
        return self._echo(np.full(self.num_envs, StepType.FIRST), np.zeros((self.num_envs, 3)))

    def step(self, action):
        self.steps += 1
        if self.config.env_fails_at_step and self.steps == self.config.env_fails_at_step and self._may_fail():
            raise RuntimeError(f"echo env copies {self.ids[0]}..{self.ids[-1]} fail at step {self.steps} as asked")
        if self.config.max_delay:
            time.sleep(self.rng.uniform(0, self.config.max_delay))
        action = np.asarray(action)
        expected = np.stack([self.ids, self.t, self.t], axis=1)
        if not np.array_equal(action, expected):
            raise AssertionError(f"echo env copies {self.ids.tolist()} got actions {action.tolist()}, "
                                 f"expected {expected.tolist()}")
        self.checked += self.num_envs
        self.t, restart, step_type = advance_episodes(self.t, self.config.episode_length)
        return self._echo(step_type, np.where(restart[:, None], 0, action))


    def _may_fail(self) -> bool:
        key = (id(self.config), int(self.ids[0]))  # survives the env being recreated with the same config
        if self.config.env_fails_once and key in _FAILED:
            return False
        _FAILED.add(key)
        return True


_FAILED: set = set()  # (config, first copy) of envs that failed already


class EchoAlgorithm(Algorithm):
    """Acts ``[env_id, t, steps since FIRST]``; one trainable scalar so the learner has work to do."""

    config_class = EchoConfig

    def __init__(self, time_step_spec, action_spec, config):
        super().__init__(time_step_spec, action_spec, config)
        self.weight = tf.Variable(1.0, name="weight")

    @property
    def state_spec(self):
        return tf.TensorSpec([], tf.int32)

    def predict(self, time_step, state):
        return self.rollout(time_step, state)

    def rollout(self, time_step, state):
        ids_and_t = tf.cast(time_step.observation, tf.int32)
        if self.config.policy_fails_at_step:  # fails once a copy reaches that step (the dummy step of specs has t = 0)
            tf.debugging.assert_none_equal(ids_and_t[:, 1], self.config.policy_fails_at_step,
                                           message="echo algorithm fails at this step as asked")
        action = tf.concat([ids_and_t, state[:, None]], axis=1)
        return PolicyStep(action, state + 1, {"weight": tf.fill(tf.shape(state), self.weight)})

    def preprocess_experience(self, exp):
        return tf.nest.map_structure(lambda t: t[:-1], exp)

    def train_step(self, exp, state):
        return PolicyStep((), state, {"value": self.weight * tf.cast(exp.reward, tf.float32)})

    def train_complete(self, tape, info, weight=None):
        with tape:
            loss = tf.reduce_mean(tf.square(info["value"] - 1.0))
        variables = [self.weight]
        return LossInfo(loss, {}), list(zip(tape.gradient(loss, variables), variables))

    def apply_gradients(self, grads_and_vars):
        for grad, var in grads_and_vars:
            var.assign_sub(0.01 * grad)


class EchoPlugin:
    """Registers the ``echo`` environment and the ``echo`` algorithm."""

    @hookimpl
    def rlengine_register_environments(self, register):
        register("echo", EchoEnv)

    @hookimpl
    def rlengine_register_algorithms(self, register):
        register("echo", EchoAlgorithm)


def echo_plugin() -> EchoPlugin:
    return EchoPlugin()
