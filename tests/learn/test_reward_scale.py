"""Reward normalisation (train.normalize_reward): per-copy discounted returns and their moments, the
scale applied to what is trained on only, and the statistics carried by checkpoints."""

import numpy as np
import pytest
import tensorflow as tf

from rlengine import hookimpl
from rlengine.api.data import Experience, LossInfo, StepType
from rlengine.errors import ConfigError
from rlengine.learn.reward_scale import RewardScale
from rlengine.run.checkpoints.store import newest_checkpoint
from rlengine.run.engine import Engine
from rlengine.testing import MemoryWriter, testing_plugin, tiny_config
from rlengine.testing.kit import CountingEnv, ToyQAlgorithm

GAMMA = 0.9


def rows(step_type, reward, env_id) -> Experience:
    """[T, B] rows with only the fields the reward scale reads."""
    return Experience(tf.constant(step_type, tf.int32), tf.constant(reward, tf.float32), (), (), (),
                      tf.constant(env_id, tf.int32), (), (), ())


def reference_returns(batches, num_envs):
    """Every non-FIRST row's discounted return, copy by copy, carried across batches."""
    running, seen = np.zeros(num_envs), []
    for step_type, reward, env_id in batches:
        for t in range(len(step_type)):
            for b, env in enumerate(env_id[t]):
                first = step_type[t][b] == StepType.FIRST
                running[env] = (0.0 if first else GAMMA * running[env]) + reward[t][b]
                if not first:
                    seen.append(running[env])
    return np.array(seen), running


def test_observe_carries_each_copys_return_across_calls_whatever_its_column():
    F, M, L = StepType.FIRST, StepType.MID, StepType.LAST
    batches = [  # copies 0, 1, 2; the second call sees them in another order, the third only copy 1
        ([[F, M, F], [M, L, M], [M, F, L]], [[0, 1, 0], [2, 5, -1], [3, 0, 4]], [[0, 1, 2]] * 3),
        ([[M, M, F], [L, M, M]], [[1, 2, 0], [6, -3, 2]], [[2, 0, 1]] * 2),
        ([[M], [M]], [[7], [1]], [[1], [1]]),
    ]
    scale = RewardScale(num_envs=3, gamma=GAMMA, clip=10.0)
    for batch in batches:
        scale.observe(rows(*batch))
    seen, running = reference_returns(batches, 3)
    np.testing.assert_allclose(scale.returns.numpy(), running, rtol=1e-12)
    assert scale.count.numpy() == len(seen)
    np.testing.assert_allclose(scale.mean.numpy(), seen.mean(), rtol=1e-12)
    np.testing.assert_allclose(scale.var.numpy(), seen.var(), rtol=1e-12)


def test_observe_in_a_graph_gives_what_it_gives_eagerly():
    batch = ([[0, 1], [1, 2], [2, 0]], [[0.0, 1.0], [2.0, 3.0], [4.0, 0.0]], [[0, 1]] * 3)
    eager, traced = RewardScale(2, GAMMA, 10.0), RewardScale(2, GAMMA, 10.0)
    eager.observe(rows(*batch))
    tf.function(traced.observe)(rows(*batch))
    for a, b in zip(eager.variables, traced.variables):
        np.testing.assert_allclose(a.numpy(), b.numpy())


def test_scaled_divides_by_the_return_std_and_clips():
    scale = RewardScale(1, GAMMA, clip=2.0)
    scale.var.assign(4.0)
    out = scale.scaled(rows([[1, 1, 1]], [[1.0, -3.0, 100.0]], [[0, 0, 0]]))
    np.testing.assert_allclose(out.reward.numpy(), [[0.5, -1.5, 2.0]], rtol=1e-6)
    assert scale.std().numpy() == pytest.approx(2.0)


# -- in a run ----------------------------------------------------------------------------------
def first_row(tmp_path, name, **train):
    config = tiny_config(str(tmp_path / name), num_env_steps=8, eval_interval=0, **train)
    Engine(config, extra_plugins=[("testing", testing_plugin())]).train()
    return next(row for row in MemoryWriter.last.rows if "loss/total" in row)


def test_on_policy_trains_on_scaled_rewards_and_reports_raw_returns(tmp_path):
    plain = first_row(tmp_path, "plain")
    scaled = first_row(tmp_path, "scaled", normalize_reward=True)
    # same seed, same first unroll: toy's loss/reward is the mean reward it trained on
    assert scaled["diagnostics/reward_scale"] > 1.5  # counting's returns of 1-2 per step spread widely
    assert scaled["loss/reward"] * scaled["diagnostics/reward_scale"] == pytest.approx(plain["loss/reward"], rel=1e-5)
    assert scaled["train/episode_return"] == plain["train/episode_return"]  # the game's units
    assert "diagnostics/reward_scale" not in plain


class MaxRewardToyQ(ToyQAlgorithm):
    """``toy-q`` reporting the largest reward of each sampled batch."""

    def train_complete(self, tape, info, weight=None):
        loss_info, grads_and_vars = super().train_complete(tape, info, weight)
        diagnostics = {"max_reward": tf.reduce_max(info["reward"])}
        return LossInfo(loss_info.loss, loss_info.extra, loss_info.priority, diagnostics), grads_and_vars


class MaxRewardPlugin:
    @hookimpl
    def rlengine_register_algorithms(self, register):
        register("max-reward-toy-q", MaxRewardToyQ)


@pytest.mark.parametrize("pipeline", ["sync", "async"])
def test_replay_keeps_raw_rewards_and_scales_each_sample(tmp_path, pipeline):
    config = tiny_config(str(tmp_path / "run"), algorithm="max-reward-toy-q", num_env_steps=48,
                         eval_interval=0, normalize_reward=True, pipeline=pipeline)
    config["async"] = {"num_env_threads": 2}  # one copy each, in either order
    engine = Engine(config, extra_plugins=[("testing", testing_plugin()), ("max", MaxRewardPlugin())])
    engine.train()
    trained = [row for row in MemoryWriter.last.rows if "loss/total" in row]
    assert trained
    for row in trained:
        assert row["diagnostics/reward_scale"] != pytest.approx(1.0)
        if pipeline == "sync":  # one scale per row (async rows average several trains' scales)
            # counting's rewards are 1 or 2 (0 on FIRST): a sample's largest, scaled back
            raw_max = row["diagnostics/max_reward"] * row["diagnostics/reward_scale"]
            assert min(abs(raw_max - 1.0), abs(raw_max - 2.0)) < 1e-4
    stored = tf.train.load_checkpoint(newest_checkpoint(str(tmp_path / "run")))
    rewards = stored.get_tensor("replay/_filled/.ATTRIBUTES/rows_1")  # Experience field 1, every stored row
    assert set(np.unique(rewards)) == {0.0, 1.0, 2.0}


def _count(run_dir) -> float:
    return float(tf.train.load_checkpoint(newest_checkpoint(str(run_dir))).get_tensor(
        "reward_scale/count/.ATTRIBUTES/VARIABLE_VALUE"))


def test_resumed_run_continues_the_statistics(tmp_path):
    plugins, run_dir = [("testing", testing_plugin())], tmp_path / "run"
    # counting's step types do not depend on actions, and its episodes restart on resume (no saved
    # state): the second half observes exactly the rows the first did
    Engine(tiny_config(str(run_dir), num_env_steps=16, normalize_reward=True), extra_plugins=plugins).train()
    half = _count(run_dir)
    assert half > 0
    Engine(tiny_config(str(run_dir), num_env_steps=32, normalize_reward=True), extra_plugins=plugins,
           force=True).train()  # force: a larger budget
    assert _count(run_dir) == 2 * half


class TwoRewardsEnv(CountingEnv):
    """counting with a reward vector of two (one per objective)."""

    def time_step_spec(self):
        return super().time_step_spec()._replace(reward=tf.TensorSpec([2], tf.float32))

    def _time_step(self, step_type, reward, discount, action):
        step = super()._time_step(step_type, reward, discount, action)
        return step._replace(reward=np.stack([step.reward, step.reward], axis=1))


class TwoRewardsPlugin:
    @hookimpl
    def rlengine_register_environments(self, register):
        register("two-rewards", TwoRewardsEnv)


def test_a_reward_that_is_not_one_float_is_refused_in_one_line(tmp_path):
    config = tiny_config(str(tmp_path / "run"), env="two-rewards", normalize_reward=True)
    with pytest.raises(ConfigError) as caught:
        Engine(config, extra_plugins=[("testing", testing_plugin()), ("two", TwoRewardsPlugin())]).train()
    message = str(caught.value)
    assert "\n" not in message and "'two-rewards'" in message and "train.normalize_reward = false" in message
