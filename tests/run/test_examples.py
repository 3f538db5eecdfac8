"""Every example config is valid: it builds an Engine (every key checked) without training."""

import glob
import os

import pytest

from rlengine.run.engine import Engine

EXAMPLES = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "..", "examples", "*.toml")))


@pytest.mark.first_party
@pytest.mark.parametrize("path", EXAMPLES, ids=[os.path.basename(p) for p in EXAMPLES])
def test_example_config_is_valid(path):
    engine = Engine(path)
    assert engine.config.train.target_return is not None  # every example states what it should reach


def test_there_is_an_example_per_learning_target():
    names = {os.path.basename(p) for p in EXAMPLES}
    assert {"ppo_cartpole.toml", "a2c_cartpole.toml", "ppo_pendulum.toml", "ppo_lstm_cartpole_novelocity.toml",
            "sac_pendulum.toml", "td3_pendulum.toml", "dqn_cartpole.toml"} <= names
