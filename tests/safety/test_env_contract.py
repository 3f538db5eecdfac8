"""An environment whose arrays stop fitting its spec is a broken contract: the run stops with one line.

Issue 50: a wrong-shaped observation, the same every step, was restarted ten
times (``train.max_env_restarts``) before the run gave up. A time step that
does not fit the spec stops the run at once; an error about shapes or dtypes
that the environment raises again after a restart (Gymnasium's vector envs
raise "Output array is the wrong shape" before any time step exists) stops it
at its second time: on the threaded pipeline, its env threads stop with it,
and the checkpoints written before stay intact.
"""

import threading

import numpy as np
import pytest

from rlengine import hookimpl
from rlengine.collect.faults import GuardedEnvironment
from rlengine.errors import EnvironmentOutputMismatch, WorkerError
from rlengine.run.checkpoints.store import newest_checkpoint
from rlengine.run.engine import Engine
from rlengine.testing import CountingEnv, testing_plugin, tiny_config

FAIL_AFTER = 40  # steps of each copy: a few iterations, and checkpoints, first


class WrongShapeAfter(CountingEnv):
    """``counting``, whose observation gets a third column after ``FAIL_AFTER`` steps."""

    steps = 0

    def step(self, action):
        time_step = super().step(action)
        self.steps += 1
        if self.steps <= FAIL_AFTER:
            return time_step
        return time_step._replace(observation=np.zeros((self.num_envs, 3), np.float32))


class RaisesShapeErrors(CountingEnv):
    """``counting``, whose step raises a vector env's shape error after ``FAIL_AFTER`` steps (``times`` times
    in all, or for ever)."""

    times: float = float("inf")
    raised = 0

    def step(self, action):
        self.steps = getattr(self, "steps", 0) + 1
        if self.steps > FAIL_AFTER and type(self).raised < self.times:
            type(self).raised += 1
            raise ValueError("Output array is the wrong shape")
        return super().step(action)


class RaisesOnce(RaisesShapeErrors):
    times = 1


class ContractPlugin:
    @hookimpl
    def rlengine_register_environments(self, register):
        register("wrong-shape", WrongShapeAfter)
        register("shape-errors", RaisesShapeErrors)
        register("shape-error-once", RaisesOnce)


def _engine(root, env, steps=100_000):
    cfg = tiny_config(str(root), env=env, num_envs=2, num_env_steps=steps, eval_interval=0, checkpoint_interval=1,
                      pipeline="async")
    cfg["async"] = {"num_env_threads": 2, "num_actor_threads": 1, "env_batch_sizes": [1, 1]}
    return Engine(cfg, extra_plugins=[("testing", testing_plugin()), ("contract", ContractPlugin())])


def _env_threads():
    return [t.name for t in threading.enumerate() if t.name.startswith(("env thread", "actor thread"))]


def test_a_shape_error_raised_again_after_a_restart_is_a_broken_contract_not_ten_restarts(tmp_path, capfd):
    RaisesShapeErrors.raised = 0
    with pytest.raises(WorkerError) as info:
        _engine(tmp_path / "run", "shape-errors").train()
    line = str(info.value)
    assert "\n" not in line and "environment 'shape-errors'" in line
    assert "raised ValueError: Output array is the wrong shape again after a restart" in line
    assert "promises observation float32 (1, 2)" in line and "test_env_contract.RaisesShapeErrors" in line
    assert capfd.readouterr().err.count("recreated it") <= 2  # one restart per env thread at most, not ten
    assert _env_threads() == []
    assert newest_checkpoint(str(tmp_path / "run")) is not None


def _stepped(env_class, steps):
    """A guarded ``env_class`` stepped ``steps`` times, as an env thread steps it."""
    env = GuardedEnvironment(lambda seed: env_class("x", 1, seed), "environment 'x'", 0)
    env.reset()
    for _ in range(steps):
        env.step(np.zeros(1, np.int32))
    return env


def test_a_time_step_that_stops_fitting_its_spec_is_never_restarted(capfd):
    with pytest.raises(EnvironmentOutputMismatch) as info:
        _stepped(WrongShapeAfter, FAIL_AFTER + 1)
    line = str(info.value)
    assert "\n" not in line and "observation has shape (1, 3), expected (1, 2)" in line  # what came, what was due
    assert "test_env_contract.WrongShapeAfter" in line  # the code to fix
    assert "recreated it" not in capfd.readouterr().err


def test_a_shape_error_that_a_restart_repairs_is_restarted(capfd):
    RaisesOnce.raised = 0
    assert _stepped(RaisesOnce, 2 * FAIL_AFTER).restarts == 1
    assert capfd.readouterr().err.count("recreated it (restart 1 of 10") == 1
