"""Runs on envpool/ ids through the engine: PPO learns CartPole-v1, a resumed run starts new episodes,
and the async pipeline steps one EnvPool per env thread."""

import importlib.metadata
import json
import os

import pytest
import rlengine_envpool.plugin
from rlengine_envpool import environment as environment_module

import rlengine
from rlengine import hookimpl

pytest.importorskip("rlengine_algorithms", reason="PPO is the algorithms plugin's")


def envpool_plugins() -> list:
    """The plugin in-process when it is not installed (its tests run from the checkout)."""
    installed = any(e.name == "envpool" for e in importlib.metadata.entry_points(group="rlengine"))
    return [] if installed else [("envpool", rlengine_envpool.plugin)]


@pytest.mark.thorough  # a training run: tox runs it in this plugin's env; the root suite leaves it out
def test_the_demo_ppo_run_learns_envpool_cartpole(tmp_path):
    """``rlengine train --env envpool/CartPole-v1``: the demo's PPO settings, until an evaluation averages 475."""
    demo = os.path.join(os.path.dirname(rlengine.__file__), "config", "default.toml")
    engine = rlengine.Engine(demo, ["train.env='envpool/CartPole-v1'", "train.writers=[]", "train.num_env_steps=60000",
                                    f"train.root_dir={json.dumps(str(tmp_path / 'run'))}"],
                             extra_plugins=envpool_plugins())
    assert engine.environment_section()[0] == "envpool"
    result = engine.train()
    assert result.reached_target and result.eval_return >= 475  # Gymnasium's CartPole takes about 13k steps


class Episodes:
    """Counts the FIRST steps of the training copies' time steps in each run."""

    def __init__(self):
        self.iterations = 0

    @hookimpl
    def rlengine_iteration_end(self, run, iteration, metrics):
        self.iterations += 1


def _short_ppo(root_dir, *plugins, pipeline="sync"):
    raw = {"train": dict(algorithm="ppo", env="envpool/CartPole-v1", num_envs=4, unroll_length=16,
                         num_env_steps=512, eval_interval=2, num_eval_episodes=2, checkpoint_interval=1, seed=5,
                         writers=[], root_dir=str(root_dir), pipeline=pipeline),
           "ppo": dict(mini_batch_size=32, num_epochs=2), "envpool": {"num_threads": 1},
           "async": {"num_env_threads": 2, "num_actor_threads": 0}}
    extra = [*envpool_plugins(), *[(f"p{i}", p) for i, p in enumerate(plugins)]]
    return rlengine.Engine(raw, extra_plugins=extra).train()


@pytest.mark.thorough  # the root suite leaves it out for time; this package's tox env runs it
def test_a_resumed_run_starts_new_episodes_and_says_so_once(tmp_path, capsys):
    from tests.run.test_resume import Interrupted, StopAfterCheckpoint

    environment_module._said_no_state.discard("envpool/CartPole-v1")
    with pytest.raises(Exception) as err:
        _short_ppo(tmp_path / "run", StopAfterCheckpoint(3))
    assert "Interrupted" in repr(err.value) or isinstance(err.value.__cause__, Interrupted)
    resumed = Episodes()
    result = _short_ppo(tmp_path / "run", resumed)
    assert result.env_steps == 512 and resumed.iterations == 8 - 3  # it went on from the checkpoint
    assert capsys.readouterr().err.count("EnvPool cannot save the state of the copies of 'envpool/CartPole-v1'") == 1


@pytest.mark.thorough  # the root suite leaves it out for time; this package's tox env runs it
def test_the_async_pipeline_steps_one_envpool_per_env_thread(tmp_path, monkeypatch):
    made = []
    original = environment_module.EnvPoolEnvironment.__init__

    def recording(self, env_id, num_envs, seed, first_env_id=0, config=None):
        original(self, env_id, num_envs, seed, first_env_id, config)
        made.append((first_env_id, num_envs, config.evaluation))

    monkeypatch.setattr(environment_module.EnvPoolEnvironment, "__init__", recording)
    result = _short_ppo(tmp_path / "run", pipeline="async")
    assert result.env_steps >= 512
    assert sorted(m for m in made if not m[2]) == [(0, 2, False), (2, 2, False)]
