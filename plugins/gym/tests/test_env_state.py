"""The environment's saved state: copies never stepped (an evaluation environment checkpointed before its
first evaluation) restore, and a run checkpointed before its first evaluation resumes."""

import numpy as np
import pytest
from rlengine_gym.environment import GymConfig, GymEnvironment

import rlengine
from rlengine import ConfigError, StepType, hookimpl
from rlengine.testing import testing_plugin, tiny_config


@pytest.mark.parametrize("vectorization", ["sync", "native"])
def test_a_state_saved_before_the_first_step_restores_and_the_copies_start_episodes(vectorization):
    config = GymConfig(vectorization=vectorization)
    never_stepped = GymEnvironment("CartPole-v1", 3, 0, config=config)
    saved = never_stepped.state()
    never_stepped.close()
    resumed = GymEnvironment("CartPole-v1", 3, 7, config=config)
    resumed.restore_state(saved)
    first = resumed.reset()
    assert (first.step_type == StepType.FIRST).all()
    assert (resumed.step(np.zeros(3, np.int32)).step_type == StepType.MID).all()
    resumed.close()
    other = GymEnvironment("CartPole-v1", 2, 0, config=config)
    with pytest.raises(ConfigError, match="the saved state holds 3 copies, this run has num_envs = 2"):
        other.restore_state(saved)
    other.close()


class Crash(Exception):
    """Stands in for the process being killed right after a checkpoint."""


class CrashAfterCheckpoint:
    @hookimpl
    def rlengine_checkpoint_saved(self, run, iteration, path):
        if iteration == 2:
            raise Crash(path)


@pytest.mark.thorough  # two short runs
def test_a_run_checkpointed_before_its_first_evaluation_resumes(tmp_path):
    """Its checkpoint holds the evaluation copies' state before they ever stepped."""
    raw = tiny_config(str(tmp_path / "run"), env="CartPole-v1", env_provider="gym", num_envs=2, unroll_length=4,
                      num_env_steps=48, eval_interval=100, checkpoint_interval=1, writers=[])
    testing = ("testing", testing_plugin())
    with pytest.raises(Exception) as crashed:  # a hook's exception may arrive wrapped
        rlengine.Engine(raw, extra_plugins=[testing, ("crash", CrashAfterCheckpoint())]).train()
    assert "Crash" in repr(crashed.value) or isinstance(crashed.value.__cause__, Crash)
    result = rlengine.Engine(raw, extra_plugins=[("testing", testing_plugin())]).train()
    assert result.env_steps == 48
