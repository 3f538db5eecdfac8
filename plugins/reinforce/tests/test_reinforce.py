"""The reinforce plugin: its returns, a fast run on CartPole-v1, and (slow) its example's learning target.

The runs step Gymnasium environments, so they need the gym plugin installed next to this package.
"""

import math
import os

import numpy as np
import pytest
import tensorflow as tf
from rlengine_reinforce.reinforce import discounted_returns

import rlengine
from rlengine import ConfigError, StepType, hookimpl

F, M, L = StepType.FIRST, StepType.MID, StepType.LAST
EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "reinforce_cartpole.toml")


def test_returns_stop_at_termination_and_bootstrap_on_truncation_and_at_the_unroll_end():
    # two copies, rows 0..4. Copy 0 terminates at row 2 and restarts at row 3; copy 1 is cut by a
    # time limit at row 1 (discount stays 1) and restarts at row 2.
    step_type = tf.constant([[F, M], [M, L], [L, F], [F, M], [M, M]])
    reward = tf.constant([[0.0, 0.0], [1.0, 1.0], [2.0, 0.0], [0.0, 3.0], [3.0, 4.0]])
    discount = tf.constant([[1.0, 1.0], [1.0, 1.0], [0.0, 1.0], [1.0, 1.0], [1.0, 1.0]])
    value = tf.constant([[0.5, 0.5], [1.0, 7.0], [9.0, 2.0], [2.0, 1.0], [4.0, 5.0]])
    g = 0.9
    ret = discounted_returns(reward, discount, step_type, value, g).numpy()
    assert ret.shape == (4, 2)
    np.testing.assert_allclose(ret[:, 0][[0, 1, 3]], [1.0 + g * 2.0, 2.0, 3.0 + g * 4.0], rtol=1e-6)
    np.testing.assert_allclose(ret[:, 1][[0, 2, 3]], [1.0 + g * 7.0, 3.0 + g * (4.0 + g * 5.0), 4.0 + g * 5.0],
                               rtol=1e-6)


class Watcher:
    """Keeps the policy's weights before and after training, and the losses of every iteration."""

    def __init__(self):
        self.before, self.after, self.losses = None, None, []

    @hookimpl
    def rlengine_train_start(self, run):
        self.before = [v.numpy().copy() for v in run.algorithm.policy.trainable_variables]

    @hookimpl
    def rlengine_iteration_end(self, run, iteration, metrics):
        self.losses.append({k: v for k, v in metrics.items() if k.startswith("loss/")})

    @hookimpl
    def rlengine_train_end(self, run, error):
        self.after = [v.numpy() for v in run.algorithm.policy.trainable_variables]


def _cartpole(tmp_path, **train):
    raw = {"train": {"algorithm": "reinforce", "env": "CartPole-v1", "num_envs": 4, "unroll_length": 16,
                     "num_env_steps": 256, "writers": [], "eval_interval": 0, "root_dir": str(tmp_path), **train}}
    return raw


def test_a_few_iterations_on_cartpole_give_finite_losses_and_change_the_policy(tmp_path):
    watcher = Watcher()
    result = rlengine.Engine(_cartpole(tmp_path), extra_plugins=[("watcher", watcher)]).train()
    assert result.env_steps == 256 and result.iterations == 4
    assert len(watcher.losses) == 4
    for losses in watcher.losses:
        assert {"loss/total", "loss/policy", "loss/baseline", "loss/entropy"} <= set(losses)
        assert all(math.isfinite(v) for v in losses.values())
    assert any(not np.array_equal(b, a) for b, a in zip(watcher.before, watcher.after))


def test_the_entry_point_registers_reinforce():
    infos = {i.name: i for i in rlengine.Engine(_cartpole("")).plugins.infos}
    assert "reinforce" in infos and infos["reinforce"].distribution == "rlengine-reinforce"


def test_continuous_actions_are_refused_with_the_algorithm_named(tmp_path):
    with pytest.raises(ConfigError, match="algorithm 'reinforce' supports Discrete actions"):
        rlengine.Engine(_cartpole(tmp_path, env="Pendulum-v1")).train()


@pytest.mark.slow
def test_the_example_reaches_475_on_cartpole(tmp_path):
    engine = rlengine.Engine(EXAMPLE, ["train.seed=0", f'train.root_dir="{tmp_path}"', "train.writers=[]"])
    result = engine.train()
    assert result.reached_target and result.eval_return >= 475
