"""PPO learns tf/CartPole-v1 with the demo's settings, as it learns Gymnasium's CartPole-v1; a run on it starts
from CartPole-v1's preset."""

import importlib.metadata
import json
import os

import pytest
import rlengine_tfenvs.plugin

import rlengine
from rlengine import hookimpl

pytest.importorskip("rlengine_algorithms", reason="PPO is the algorithms plugin's")


def tfenvs_plugins() -> dict:
    """The plugin in-process when it is not installed (its tests run from the checkout)."""
    installed = any(e.name == "tfenvs" for e in importlib.metadata.entry_points(group="rlengine"))
    return {} if installed else {"extra_plugins": [("tfenvs", rlengine_tfenvs.plugin)]}


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
    return rlengine.Engine(None, ["train.algorithm='ppo'", "train.env='tf/CartPole-v1'", *overrides],
                           extra_plugins=[*plugins, *extra])


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
