"""Plugins of the testing kit that fail on purpose, for the tests of rlengine's error handling.

Each failure comes at a point the test chooses, so a test can check what the core does then:

- :class:`FailAt` raises from a lifecycle hook at a chosen iteration (a run that fails mid-way);
- ``nan-toy`` (:class:`NaNToyAlgorithm`, registered by :class:`NaNPlugin`) turns its loss, a loss
  term, a gradient or a weight non-finite for a chosen part of the run (the NaN guard);
- ``faulty`` (:class:`FaultyEnv`, registered by :func:`~rlengine.testing.kit.testing_plugin`)
  raises, hangs or observes NaN at chosen step or reset numbers (the environment fault guard).

Built on the well-behaved parts of :mod:`rlengine.testing.kit`; that module registers ``faulty``
by its ``"module:Class"`` name rather than import this one, so the two never import each other.
"""

from __future__ import annotations

import attrs
import numpy as np
import tensorflow as tf

from rlengine import hookimpl
from rlengine.api.data import LossInfo
from rlengine.testing.kit import CountingConfig, CountingEnv, ToyAlgorithm


class FailAt:
    """A plugin whose ``rlengine_iteration_end`` raises ``RuntimeError("stop at iteration N")`` at
    iteration ``N``, after that iteration's summary row was written (a run that fails mid-way)."""

    def __init__(self, iteration: int) -> None:
        self.iteration = iteration

    @hookimpl
    def rlengine_iteration_end(self, run, iteration, metrics):
        if iteration == self.iteration:
            raise RuntimeError(f"stop at iteration {iteration}")


# -- NaN on demand (the NaN guard's tests) ------------------------------------------


@attrs.define
class NaNToyConfig:
    #: what turns non-finite: "loss" (the total only), "term" (the extra term "policy", hence the
    #: total), "gradient" (the kernel's gradient; the loss stays finite), "weights" (a weight the
    #: policy does not read, so collection goes on; written after an applied update)
    poison: str = attrs.field(default="loss", validator=attrs.validators.in_(("loss", "term", "gradient", "weights")))
    nan_from: float = 0.0  # poisoned while nan_from <= progress < nan_until (fractions of the budget)
    nan_until: float = 2.0


@tf.custom_gradient
def _add_to_gradient(x, extra):
    """Identity forward; the gradient of ``x`` gets ``extra`` added (NaN makes it non-finite)."""
    return tf.identity(x), lambda dy: (dy + extra, tf.zeros_like(extra))


class NaNToyAlgorithm(ToyAlgorithm):
    """``toy`` that goes non-finite on demand, at a chosen fraction of the run."""

    config_class = NaNToyConfig

    def __init__(self, time_step_spec, action_spec, config):
        super().__init__(time_step_spec, action_spec, config)
        self.spare = tf.Variable([0.0, 0.0], trainable=False, name="spare")

    def _nan_or_zero(self):
        cfg = self.config
        poisoned = tf.logical_and(self.progress >= cfg.nan_from, self.progress < cfg.nan_until)
        return tf.where(poisoned, tf.constant(np.nan, tf.float32), 0.0)

    def train_complete(self, tape, info, weight=None):
        poison, nan = self.config.poison, self._nan_or_zero()
        with tape:
            policy = -tf.reduce_mean(info["log_prob"] * info["reward"])
            if poison == "term":
                policy = policy + nan
            loss = policy + nan if poison == "loss" else policy
            if poison == "gradient":
                loss = loss + 0.0 * tf.reduce_sum(_add_to_gradient(self.logits.kernel, nan))
        variables = self.trainable_variables
        grads = tape.gradient(loss, variables)
        return LossInfo(loss, {"policy": policy}), list(zip(grads, variables))

    def after_update(self):
        if self.config.poison == "weights":
            self.spare.assign_add(tf.fill([2], self._nan_or_zero()))


class NaNPlugin:
    """Registers ``nan-toy`` (:class:`NaNToyAlgorithm`); use it next to :func:`testing_plugin`."""

    @hookimpl
    def rlengine_register_algorithms(self, register):
        register("nan-toy", NaNToyAlgorithm)


# -- environment faults on demand (the fault tests) -----------------------------------


@attrs.define
class FaultyConfig(CountingConfig):
    #: Counters are kept per plan name across every instance, so the plan survives restarts;
    #: :func:`reset_fault_plan` forgets them. Step numbers count batched step() calls from 1,
    #: reset numbers count reset() calls from 1 (the first is the build's check).
    plan: str = "default"
    fail_steps: list = attrs.field(factory=list)  # step() raises at these step numbers
    fail_resets: list = attrs.field(factory=list)  # reset() raises at these reset numbers
    hang_at_step: int = 0  # step() sleeps hang_seconds at this step number (0: never)
    hang_seconds: float = 5.0
    nan_at_step: int = 0  # copy 1 (or 0 if alone) observes NaN at this step number (0: never)


class FaultyEnv(CountingEnv):
    """``counting`` that raises, hangs or observes NaN at chosen steps; observation ``[t, env_id, mark]``.

    ``mark`` tells where a row came from: the step number of the step() call that
    produced it, or minus the reset number for a reset's FIRST rows.
    """

    config_class = FaultyConfig
    counters: dict = {}  # plan -> {"steps": n, "resets": n, "hang_started": perf_counter() time}

    def __init__(self, env_id, num_envs, seed, first_env_id=0, config=None):
        super().__init__(env_id, num_envs, seed, first_env_id, config or FaultyConfig())
        self.count = FaultyEnv.counters.setdefault(self.config.plan, {"steps": 0, "resets": 0})
        self.mark = 0.0

    def time_step_spec(self):
        return super().time_step_spec()._replace(observation=tf.TensorSpec([3], tf.float32))

    def _time_step(self, step_type, reward, discount, action):
        time_step = super()._time_step(step_type, reward, discount, action)
        mark = np.full([self.num_envs, 1], self.mark, np.float32)
        return time_step._replace(observation=np.concatenate([time_step.observation, mark], axis=1))

    def reset(self):
        self.count["resets"] += 1
        if self.count["resets"] in self.config.fail_resets:
            raise RuntimeError(f"injected reset fault at reset {self.count['resets']}")
        self.mark = -float(self.count["resets"])
        return super().reset()

    def step(self, action):
        self.count["steps"] += 1
        n, cfg = self.count["steps"], self.config
        if n in cfg.fail_steps:
            raise RuntimeError(f"injected step fault at step {n}")
        if n == cfg.hang_at_step:
            import time

            self.count["hang_started"] = time.perf_counter()
            time.sleep(cfg.hang_seconds)
        self.mark = float(n)
        time_step = super().step(action)
        if n == cfg.nan_at_step:
            time_step.observation[min(1, self.num_envs - 1), 0] = np.nan
        return time_step


def reset_fault_plan(plan: str) -> None:
    """Forget the step and reset counts of ``plan`` (before a run that uses it)."""
    FaultyEnv.counters.pop(plan, None)
