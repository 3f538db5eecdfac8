"""A testing kit for rlengine and plugin authors: tiny plugins that need no other package.

Register them in-process::

    import rlengine
    from rlengine.testing import testing_plugin, tiny_config
    engine = rlengine.Engine(tiny_config(), extra_plugins=[("testing", testing_plugin())])

``counting`` is a deterministic environment, ``pixels``, ``pixels-dict`` and ``masked`` tiny
image, Dict-observation and action-masked ones (:mod:`.pixels`), ``toy`` a small trainable
on-policy algorithm, ``toy-q`` an off-policy one (learns from replay), ``memory`` a writer that keeps its rows, and :class:`HookRecorder`
records every lifecycle hook call in order. The plugins that fail on purpose (``faulty``,
``nan-toy``, :class:`~rlengine.testing.failing.FailAt`) are in :mod:`.failing`.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp
import tf_keras

from rlengine import hookimpl
from rlengine.api import Algorithm, Environment, SummaryWriter, seeding
from rlengine.api.data import LossInfo, PolicyStep, StepType, TimeStep
from rlengine.testing.pixels import (  # noqa: F401  (the kit's API)
    IllegalAction,
    MaskedConfig,
    MaskedEnv,
    PixelsConfig,
    PixelsDictEnv,
    PixelsEnv,
    advance_episodes,
)

tfd = tfp.distributions


@attrs.define
class CountingConfig:
    episode_length: int = attrs.field(default=4, validator=attrs.validators.gt(0))


class CountingEnv(Environment):
    """Observation ``[t, env_id]``; action 0/1; reward ``1 + action``; terminates at ``episode_length``."""

    config_class = CountingConfig

    def __init__(self, env_id, num_envs, seed, first_env_id=0, config=None):
        super().__init__(env_id, num_envs, seed, first_env_id, config or CountingConfig())
        self.ids = np.arange(first_env_id, first_env_id + num_envs, dtype=np.int32)
        self.t = np.zeros(num_envs, np.int32)
        self.closed = False

    def time_step_spec(self):
        s = tf.TensorSpec
        return TimeStep(s([], tf.int32), s([], tf.float32), s([], tf.float32), s([2], tf.float32),
                        self.action_spec(), s([], tf.int32))

    def action_spec(self):
        from rlengine.api.specs import BoundedTensorSpec

        return BoundedTensorSpec([], tf.int32, 0, 1)

    def _time_step(self, step_type, reward, discount, action):
        obs = np.stack([self.t, self.ids], axis=1).astype(np.float32)
        return TimeStep(step_type.astype(np.int32), reward.astype(np.float32), discount.astype(np.float32),
                        obs, action.astype(np.int32), self.ids.copy())

    def reset(self):
        self.t[:] = 0
        n = self.num_envs
        return self._time_step(np.zeros(n), np.zeros(n), np.ones(n), np.zeros(n))

    def step(self, action):
        action = np.asarray(action)
        self.t, restart, step_type = advance_episodes(self.t, self.config.episode_length)
        reward = np.where(restart, 0.0, 1.0 + action)
        discount = np.where(step_type == StepType.LAST, 0.0, 1.0)
        return self._time_step(step_type, reward, discount, np.where(restart, 0, action))

    def close(self):
        self.closed = True


class DictCountingEnv(CountingEnv):
    """``counting`` with a dict observation, ``{"position": [t, env_id], "parity": t % 2}``: nested leaves in
    the middle of the flat time step."""

    def time_step_spec(self):
        spec = super().time_step_spec()
        return spec._replace(observation={"position": spec.observation, "parity": tf.TensorSpec([], tf.int32)})

    def _time_step(self, step_type, reward, discount, action):
        time_step = super()._time_step(step_type, reward, discount, action)
        return time_step._replace(observation={"position": time_step.observation, "parity": self.t % 2})


class ToyAlgorithm(Algorithm):
    """A linear softmax policy trained by a one-step policy gradient (learns ``action = 1``)."""

    def __init__(self, time_step_spec, action_spec, config):
        super().__init__(time_step_spec, action_spec, config)
        self.logits = tf_keras.layers.Dense(2, kernel_initializer="zeros")
        self.optimizer = tf_keras.optimizers.SGD(0.1)

    def _dist(self, observation):
        return tfd.Categorical(logits=self.logits(observation * 0.0 + 1.0), dtype=tf.int32)

    def predict(self, time_step, state):
        return PolicyStep(self._dist(time_step.observation).mode(), state, ())

    def rollout(self, time_step, state):
        dist = self._dist(time_step.observation)
        return PolicyStep(dist.sample(seed=seeding.seed()), state, {"dist": dist})

    def preprocess_experience(self, exp):
        rows = tf.nest.map_structure(lambda t: t[:-1], exp._replace(rollout_info=()))
        return rows._replace(rollout_info=exp.reward[1:])  # the reward each action earned

    def train_step(self, exp, state):
        dist = self._dist(exp.observation)
        return PolicyStep((), state, {"log_prob": dist.log_prob(exp.action), "reward": exp.rollout_info})

    def train_complete(self, tape, info, weight=None):
        with tape:
            loss = -tf.reduce_mean(info["log_prob"] * info["reward"])
        variables = self.trainable_variables
        grads = tape.gradient(loss, variables)
        return LossInfo(loss, {"reward": tf.reduce_mean(info["reward"])}), list(zip(grads, variables))


class ToyQAlgorithm(Algorithm):
    """Off-policy: learns the reward of each action from replayed transitions (learns ``action = 1``)."""

    off_policy = True
    mini_batch_size = 8
    mini_batch_length = 2
    num_updates_per_iteration = 4
    initial_collect_steps = 8
    replay_capacity = 64

    def __init__(self, time_step_spec, action_spec, config):
        super().__init__(time_step_spec, action_spec, config)
        self.q = tf.Variable([0.0, 0.0], name="q")
        self.optimizer = tf_keras.optimizers.SGD(0.2)

    def predict(self, time_step, state):
        batch = tf.shape(time_step.step_type)[0]
        return PolicyStep(tf.fill([batch], tf.cast(tf.argmax(self.q), tf.int32)), state, ())

    def rollout(self, time_step, state):
        batch = tf.shape(time_step.step_type)[0]
        return PolicyStep(tf.random.stateless_uniform([batch], seeding.seed(), 0, 2, tf.int32), state, ())

    def preprocess_experience(self, exp):
        # [2, B] sequences -> transitions: action at row 0, reward on arriving at row 1
        valid = tf.cast(exp.step_type[0] != StepType.LAST, tf.float32)
        return {"action": exp.action[0], "reward": exp.reward[1], "valid": valid}

    def train_step(self, batch, state):
        return PolicyStep((), state, {**batch, "q": tf.gather(self.q, batch["action"])})

    def train_complete(self, tape, info, weight=None):
        with tape:
            error = (info["q"] - info["reward"]) * info["valid"]
            loss = tf.reduce_mean(tf.square(error))
        grads = tape.gradient(loss, [self.q])
        return LossInfo(loss, {"q1": self.q[1]}, priority=tf.abs(error)), [(grads[0], self.q)]


class MemoryWriter(SummaryWriter):
    """Keeps every row in ``self.rows`` (and in ``MemoryWriter.last`` for tests)."""

    last: "MemoryWriter | None" = None

    def __init__(self, root_dir, config, total_env_steps=0):
        super().__init__(root_dir, config, total_env_steps)
        self.rows: list[dict] = []
        MemoryWriter.last = self

    def write(self, metrics):
        self.rows.append(dict(metrics))


class TestingPlugin:
    """Registers ``counting``, ``faulty``, ``pixels``, ``pixels-dict``, ``masked``, the graph environment
    ``graph-counting``, ``toy``, ``toy-q`` and ``memory``."""

    __test__ = False  # not a pytest test class, despite its name

    @hookimpl
    def rlengine_register_environments(self, register):
        register("counting", CountingEnv)
        # by reference: rlengine.testing.failing builds on this module, so this one cannot import it
        register("faulty", "rlengine.testing.failing:FaultyEnv")
        register("pixels", PixelsEnv)
        register("pixels-dict", PixelsDictEnv)
        register("masked", MaskedEnv)

    @hookimpl
    def rlengine_register_graph_environments(self, register):
        register("graph-counting", "rlengine.testing.graph_counting:GraphCountingEnv")  # it builds on this module

    @hookimpl
    def rlengine_register_algorithms(self, register):
        register("toy", ToyAlgorithm)
        register("toy-q", ToyQAlgorithm)

    @hookimpl
    def rlengine_register_writers(self, register):
        register("memory", MemoryWriter)


def testing_plugin() -> TestingPlugin:
    """A fresh plugin object registering ``counting``, ``toy`` and ``memory``."""
    return TestingPlugin()


testing_plugin.__test__ = False  # type: ignore[attr-defined]  # not a pytest test, despite its name


class TrackedCountingEnv(CountingEnv):
    """``counting`` that keeps every instance made in ``made`` (reset it first): the core may wrap
    environments, so a test counting the copies a run made, or checking they were closed, looks here."""

    made: list = []

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        TrackedCountingEnv.made.append(self)


class _RegistersTracked:
    @hookimpl
    def rlengine_register_environments(self, register: Any) -> None:
        register("tracked", TrackedCountingEnv)


def tracked_env_plugin() -> Any:
    """A plugin registering :class:`TrackedCountingEnv` as ``tracked``."""
    return _RegistersTracked()


def tiny_config(root_dir: str = "", **train: Any) -> dict:
    """A raw config that runs in about a second with the testing plugins."""
    # no checkpoints by the clock: on a busy machine they would land at other iterations from run to run
    values = dict(algorithm="toy", env="counting", num_envs=2, unroll_length=4, num_env_steps=32,
                  writers=["memory"], eval_interval=2, num_eval_episodes=2, checkpoint_seconds=0, root_dir=root_dir)
    values.update(train)
    return {"train": values}


class HookRecorder:
    """A plugin recording the name (and iteration) of every lifecycle hook call."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    @hookimpl
    def rlengine_configure(self, config):
        self.calls.append("configure")

    @hookimpl
    def rlengine_train_start(self, run):
        self.calls.append("train_start")

    @hookimpl
    def rlengine_iteration_end(self, run, iteration, metrics):
        self.calls.append(f"iteration_end:{iteration}")

    @hookimpl
    def rlengine_evaluation_end(self, run, iteration, metrics):
        self.calls.append(f"evaluation_end:{iteration}")

    @hookimpl
    def rlengine_checkpoint_saved(self, run, iteration, path):
        self.calls.append(f"checkpoint_saved:{iteration}")

    @hookimpl
    def rlengine_train_end(self, run, error):
        self.calls.append("train_end" if error is None else f"train_end:{type(error).__name__}")
