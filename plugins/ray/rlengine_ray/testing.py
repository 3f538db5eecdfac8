"""Testing kit of the ray pipeline: what its tests and chaos benchmark run, importable on every node.

* ``probe`` (algorithm): the testing kit's ``toy`` policy whose rollout info
  carries ``probe``, a variable every update adds one to; so every row of an
  unroll shows the weights that acted on it. ``probe-q``: the same on
  ``toy-q``, off-policy.
* ``chaos`` (environment): the testing kit's ``counting`` env that, in the
  runner whose first env id is ``[chaos] runner_first_env_id``, raises at its
  ``raise_at_step``-th batched step or sleeps ``hang_seconds`` at its
  ``hang_at_step``-th. With ``once_file`` the fault happens once: the env
  writes that file when it strikes and never strikes while it exists, so a
  restarted runner runs on.
* ``teams`` (environment): ``chaos`` whose rows are two groups, ``even`` and ``odd`` copies, with win rates.

Register with ``extra_plugins=testing_plugins()``; :func:`ray_config` is a tiny run on them.
"""

from __future__ import annotations

import os
import sys
import time

import attrs

# isort: off
import rlengine.collect  # noqa: F401  (first: its __init__ imports TensorFlow, quietly)
import tensorflow as tf
# isort: on

from rlengine import hookimpl
from rlengine.testing.kit import CountingConfig, CountingEnv, ToyAlgorithm, ToyQAlgorithm, testing_plugin, tiny_config


class _Probe:
    """Adds the ``probe`` variable to a testing-kit algorithm (first in the bases, so ``super()`` is the kit's)."""

    def __init__(self, time_step_spec, action_spec, config):
        super().__init__(time_step_spec, action_spec, config)
        self.probe = tf.Variable(0.0, trainable=False, name="probe")

    def rollout(self, time_step, state):
        step = super().rollout(time_step, state)
        info = dict(step.info) if isinstance(step.info, dict) else {}
        probe = tf.fill([tf.shape(time_step.step_type)[0]], tf.identity(self.probe))
        return step._replace(info={**info, "probe": probe})

    def train_complete(self, tape, info, weight=None):
        self.probe.assign_add(1.0)
        return super().train_complete(tape, info, weight)


class ProbeAlgorithm(_Probe, ToyAlgorithm):
    """``toy`` (on-policy) with the probe."""


class ProbeQAlgorithm(_Probe, ToyQAlgorithm):
    """``toy-q`` (off-policy, from replay) with the probe."""


@attrs.define
class ChaosConfig(CountingConfig):
    runner_first_env_id: int = 0  # the runner whose env strikes (by its first env id)
    raise_at_step: int = 0  # 0: never
    hang_at_step: int = 0  # 0: never
    hang_seconds: float = 3600.0
    once_file: str = ""  # "": strike in every life of the runner


class ChaosEnv(CountingEnv):
    config_class = ChaosConfig

    def __init__(self, env_id, num_envs, seed, first_env_id=0, config=None):
        super().__init__(env_id, num_envs, seed, first_env_id, config or ChaosConfig())
        self.steps = 0

    def step(self, action):
        self.steps += 1
        cfg = self.config
        if self.first_env_id == cfg.runner_first_env_id and self._may_strike():
            if self.steps == cfg.raise_at_step:
                self._struck()
                raise RuntimeError(f"chaos env {self.first_env_id} raised at step {self.steps}")
            if self.steps == cfg.hang_at_step:
                self._struck()
                time.sleep(cfg.hang_seconds)
        return super().step(action)

    def _may_strike(self) -> bool:
        return not (self.config.once_file and os.path.exists(self.config.once_file))

    def _struck(self) -> None:
        if self.config.once_file:
            with open(self.config.once_file, "w") as f:
                f.write(str(os.getpid()))


class TeamsEnv(ChaosEnv):
    """``chaos`` whose rows are two teams by the parity of their env id, with outcomes (a reward above 0 is
    a win): what a multi-agent environment declares for the engine's per-group metrics."""

    episode_outcomes = True

    @property
    def row_groups(self) -> list:
        return ["even" if i % 2 == 0 else "odd" for i in self.ids.tolist()]


@hookimpl
def rlengine_register_algorithms(register):
    register("probe", ProbeAlgorithm)
    register("probe-q", ProbeQAlgorithm)


@hookimpl
def rlengine_register_environments(register):
    register("chaos", ChaosEnv)
    register("teams", TeamsEnv)


def testing_plugins() -> list:
    """``extra_plugins`` for a run on this kit: the core's testing kit and this module."""
    return [("testing", testing_plugin()), ("ray-testing", sys.modules[__name__])]


testing_plugins.__test__ = False  # type: ignore[attr-defined]  # not a pytest test, despite its name


def ray_config(root_dir: str, *, ray_section=None, sections=None, **train) -> dict:
    """The testing kit's tiny config on the ray pipeline: 2 runners of 2 copies, half a CPU each."""
    values = dict(pipeline="ray", algorithm="probe", env="chaos", num_envs=4, unroll_length=4,
                  num_env_steps=64, eval_interval=0, writers=[])
    values.update(train)
    config = tiny_config(root_dir, **values)
    config["ray"] = {"num_runners": 2, "num_cpus_per_runner": 0.5, "start_timeout": 120.0, **(ray_section or {})}
    config.update(sections or {})
    return config
