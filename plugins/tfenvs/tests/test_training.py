"""PPO learns tf/CartPole-v1 with the demo's settings, as it learns Gymnasium's CartPole-v1."""

import importlib.metadata
import json
import os

import pytest
import rlengine_tfenvs.plugin

import rlengine

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
