"""PPO learns tf/CartPole-v1 with the demo's settings, as it learns Gymnasium's CartPole-v1; a run on it starts
from CartPole-v1's preset."""

import importlib.metadata
import json
import os

import numpy as np
import pytest
import rlengine_tfenvs.plugin

import rlengine
from rlengine import hookimpl

pytest.importorskip("rlengine_algorithms", reason="PPO is the algorithms plugin's")


def tfenvs_plugins() -> dict:
    """The plugin in-process when it is not installed (its tests run from the checkout)."""
    installed = any(e.name == "tfenvs" for e in importlib.metadata.entry_points(group="rlengine"))
    return {} if installed else {"extra_plugins": [("tfenvs", rlengine_tfenvs.plugin)]}


@pytest.mark.thorough  # the root suite leaves it out for time; this package's tox env runs it
def test_the_demo_ppo_run_reaches_475_on_tf_cartpole(tmp_path):
    """``rlengine train``'s run (PPO tuned for CartPole-v1, until an evaluation averages 475) on the graph twin."""
    demo = os.path.join(os.path.dirname(rlengine.__file__), "config", "default.toml")
    result = rlengine.Engine(demo, ["train.env='tf/CartPole-v1'", 'train.writers=[]',
                                    f"train.root_dir={json.dumps(str(tmp_path / 'run'))}"], **tfenvs_plugins()).train()
    assert result.reached_target and result.eval_return >= 475
    assert result.env_steps <= 50_000  # Gymnasium's CartPole takes about 13k with these settings


# -- presets: a graph environment takes its twin's ------------------------------------------
def _engine(*overrides, extra=()):
    plugins = tfenvs_plugins().get("extra_plugins", [])
    # no writers: the preset's console writer comes with the writers plugin, which tox -e tfenvs leaves out
    return rlengine.Engine(None, ["train.algorithm='ppo'", "train.env='tf/CartPole-v1'", "train.writers=[]",
                                  *overrides], extra_plugins=[*plugins, *extra])


def test_tf_cartpole_starts_from_cartpole_v1s_ppo_preset():
    run = _engine()
    cfg = run.config
    assert (run.preset.name, run.preset.serves, cfg.train.env) == ("ppo/CartPole-v1", "tf/CartPole-v1", "tf/CartPole-v1")
    assert (cfg.train.num_envs, cfg.train.unroll_length, cfg.sections["ppo"].gamma) == (8, 32, 0.98)
    assert run.preset.announcement() == ("rlengine: settings from the preset ppo/CartPole-v1 (plugin 'algorithms', "
                                         "for tf/CartPole-v1, its twin); --no-preset for plain defaults")


class OwnPreset:
    """Registers a preset for the graph environment's own id."""

    def __init__(self, path):
        self.path = path

    @hookimpl
    def rlengine_register_presets(self, register):
        register("ppo/tf/CartPole-v1", self.path)


def test_a_preset_naming_the_tf_id_wins_over_the_twins(tmp_path):
    path = tmp_path / "ppo_tf_CartPole-v1.toml"
    path.write_text('[train]\nalgorithm = "ppo"\nenv = "tf/CartPole-v1"\nnum_envs = 64\n')
    run = _engine(extra=[("own", OwnPreset(path))])
    assert (run.preset.name, run.preset.serves, run.config.train.num_envs) == ("ppo/tf/CartPole-v1", None, 64)
    assert _engine("train.num_envs=4").config.train.num_envs == 4  # overrides still apply on top of the twin's


# -- resume: the evaluations go on as in an uninterrupted run -------------------------------
class FinalWeights:
    """Keeps the algorithm's weights after the run's last iteration."""

    @hookimpl
    def rlengine_iteration_end(self, run, iteration, metrics):
        self.weights = [v.numpy() for v in run.internals.algorithm.variables]


def _short_ppo(root_dir, *plugins):
    raw = {"train": dict(algorithm="ppo", env="tf/CartPole-v1", num_envs=4, unroll_length=16, num_env_steps=512,
                         eval_interval=2, num_eval_episodes=4, checkpoint_interval=1, seed=5, writers=[],
                         root_dir=str(root_dir)),
           "ppo": dict(mini_batch_size=32, num_epochs=2)}
    extra = tfenvs_plugins().get("extra_plugins", [])
    return rlengine.Engine(raw, extra_plugins=[*extra, *[(f"p{i}", p) for i, p in enumerate(plugins)]]).train()


@pytest.mark.thorough  # a training run: tox runs it in this plugin's env; the root suite leaves it out
def test_a_resumed_run_evaluates_and_ends_as_an_uninterrupted_one(tmp_path):
    """Each evaluation's episodes are seeded by the resets before it: the count is checkpointed."""
    from tests.run.test_resume import Interrupted, StopAfterCheckpoint

    straight_weights = FinalWeights()
    straight = _short_ppo(tmp_path / "straight", straight_weights)
    with pytest.raises(Exception) as err:
        _short_ppo(tmp_path / "resumed", StopAfterCheckpoint(4))
    assert "Interrupted" in repr(err.value) or isinstance(err.value.__cause__, Interrupted)
    resumed_weights = FinalWeights()
    resumed = _short_ppo(tmp_path / "resumed", resumed_weights)

    evaluations = [(steps, ret) for steps, _, ret in straight.eval_history]
    assert len(evaluations) == 4 and len({ret for _, ret in evaluations}) > 1  # the episodes differ between them
    assert [(steps, ret) for steps, _, ret in resumed.eval_history] == evaluations[2:]
    for straight_weight, resumed_weight in zip(straight_weights.weights, resumed_weights.weights, strict=True):
        np.testing.assert_array_equal(straight_weight, resumed_weight)


@pytest.mark.thorough  # a training run: tox runs it in this plugin's env; the root suite leaves it out
def test_ppo_trains_on_tf_cartpole_in_the_async_pipeline(tmp_path):
    """Each env thread steps its own copies of the graph environment, inside its own graph."""
    raw = {"train": dict(algorithm="ppo", env="tf/CartPole-v1", pipeline="async", num_envs=4, unroll_length=16,
                         num_env_steps=256, eval_interval=8, num_eval_episodes=2, writers=[],
                         root_dir=str(tmp_path / "run"))}
    result = rlengine.Engine(raw, **tfenvs_plugins()).train()
    assert result.env_steps == 256 and len(result.eval_history) == 2
