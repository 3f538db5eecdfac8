"""Learning runs to the issue's thresholds (slow: `python -m pytest -m slow`).

Each runs the example config of the same name; the thresholds are what the
algorithms reach there (see the benchmark notes in the closing notes).
"""

import os

import pytest

from rlengine.run.engine import Engine

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples")

pytestmark = pytest.mark.slow


def _train(tmp_path, example, seed=0):
    path = os.path.join(EXAMPLES, example)
    return Engine(path, [f"train.seed={seed}", f'train.root_dir="{tmp_path}"', 'train.writers=["jsonl"]']).train()


def test_ppo_reaches_475_on_cartpole(tmp_path):
    result = _train(tmp_path, "ppo_cartpole.toml")
    assert result.reached_target and result.eval_return >= 475


def test_a2c_reaches_475_on_cartpole(tmp_path):
    result = _train(tmp_path, "a2c_cartpole.toml")
    assert result.reached_target and result.eval_return >= 475


def test_ppo_reaches_minus_250_on_pendulum_with_the_normaliser(tmp_path):
    result = _train(tmp_path, "ppo_pendulum.toml")
    assert result.reached_target and result.eval_return >= -250


def test_lstm_ppo_reaches_475_on_cartpole_without_velocities(tmp_path):
    result = _train(tmp_path, "ppo_lstm_cartpole_novelocity.toml")
    assert result.reached_target and result.eval_return >= 475


def test_sac_reaches_minus_200_on_pendulum(tmp_path):
    result = _train(tmp_path, "sac_pendulum.toml")
    assert result.reached_target and result.eval_return >= -200


def test_td3_reaches_minus_200_on_pendulum(tmp_path):
    result = _train(tmp_path, "td3_pendulum.toml")
    assert result.reached_target and result.eval_return >= -200


def test_dqn_reaches_475_on_cartpole(tmp_path):
    result = _train(tmp_path, "dqn_cartpole.toml")
    assert result.reached_target and result.eval_return >= 475
