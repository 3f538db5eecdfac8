import numpy as np
import pytest
import tensorflow as tf

from rlengine.api.data import StepType
from rlengine.collect.policy_step import reset_where_first
from rlengine.config import build_config
from rlengine.run.build import build_components, config_classes
from rlengine.run.episodes import EpisodeStats
from rlengine.testing import tiny_config


@pytest.fixture(params=[False, True], ids=["graph", "eager"])
def components(request, plugins, tmp_path):
    tf.config.run_functions_eagerly(request.param)
    raw = tiny_config(str(tmp_path), num_envs=3, unroll_length=5)
    raw["counting"] = {"episode_length": 3}
    config = build_config(raw, config_classes(plugins))
    parts = build_components(config, plugins, str(tmp_path))
    yield parts
    parts.close()
    tf.config.run_functions_eagerly(False)


def test_unrolls_overlap_by_one_row_so_no_reward_is_lost(components):
    carry = components.pipeline.collector.start()
    first, carry = components.pipeline.collector.run(carry)
    second, _ = components.pipeline.collector.run(carry)
    assert first.step_type.shape == [6, 3]  # unroll_length + 1 rows
    for a, b in zip(tf.nest.flatten(first), tf.nest.flatten(second)):
        np.testing.assert_array_equal(a[-1], b[0])
    # Episode of length 3: FIRST, MID, MID, LAST, then FIRST again (reward 0 there).
    steps = np.concatenate([first.step_type, second.step_type[1:]])[:, 0]
    np.testing.assert_array_equal(steps[:9], [0, 1, 1, 2, 0, 1, 1, 2, 0])
    rewards = np.concatenate([first.reward, second.reward[1:]])[:, 0]
    actions = np.concatenate([first.action, second.action[1:]])[:, 0]
    for t in range(1, 9):  # the reward of row t is 1 + the action of row t-1, except after LAST
        expected = 0.0 if steps[t] == StepType.FIRST else 1.0 + actions[t - 1]
        assert rewards[t] == expected
    np.testing.assert_array_equal(first.env_id[0], [0, 1, 2])
    np.testing.assert_array_equal(first.observation[:4, 0, 0], [0, 1, 2, 3])


def test_reset_where_first_only_touches_first_rows():
    state = tf.constant([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
    step_type = tf.constant([StepType.MID, StepType.FIRST, StepType.LAST])
    out = reset_where_first(step_type, state, tf.zeros_like(state))
    np.testing.assert_array_equal(out, [[1, 1], [0, 0], [3, 3]])


def test_episode_stats_count_whole_episodes_across_unrolls():
    stats = EpisodeStats(1)
    F, M, L = StepType.FIRST, StepType.MID, StepType.LAST
    stats.add(np.array([[M], [M]]), np.array([[1.0], [1.0]]))
    assert stats.pop() == {}
    stats.add(np.array([[L], [F], [M]]), np.array([[1.0], [0.0], [5.0]]))
    assert stats.pop() == {"train/episode_return": 3.0, "train/episode_length": 3.0, "train/episodes": 1.0}


def _episode_stats_row_by_row(stats: EpisodeStats, step_type, reward, ids) -> None:
    """The definition: each row resets the copies it starts, adds to the others, and records the ones it ends."""
    for st, r in zip(step_type, reward):
        stats.returns[ids[st == StepType.FIRST]] = 0.0
        stats.lengths[ids[st == StepType.FIRST]] = 0
        going = ids[st != StepType.FIRST]
        stats.returns[going] += r[st != StepType.FIRST]
        stats.lengths[going] += 1
        stats.finished_returns.extend(stats.returns[ids[st == StepType.LAST]].tolist())
        stats.finished_lengths.extend(stats.lengths[ids[st == StepType.LAST]].tolist())


@pytest.mark.parametrize("env_ids", [None, [4, 1, 3]])
def test_episode_stats_sum_rows_without_a_boundary_at_once_to_the_same_bits(env_ids):
    rng = np.random.default_rng(0)
    fast, reference = EpisodeStats(5), EpisodeStats(5)
    ids = np.arange(3) if env_ids is None else np.array(env_ids)
    for _ in range(20):  # unrolls of 8 rows, 3 copies, episodes of 1-12 steps ending anywhere
        step_type = rng.choice([StepType.MID] * 10 + [StepType.LAST], size=(8, 3))
        step_type[1:][step_type[:-1] == StepType.LAST] = StepType.FIRST
        reward = rng.normal(size=(8, 3)).astype(np.float32) * 1e3
        fast.add(step_type, reward, env_ids)
        _episode_stats_row_by_row(reference, step_type, reward, ids)
    assert len(reference.finished_returns) > 10
    assert fast.finished_returns == reference.finished_returns  # exactly: the same additions in the same order
    assert fast.finished_lengths == reference.finished_lengths
    np.testing.assert_array_equal(fast.returns, reference.returns)
    np.testing.assert_array_equal(fast.lengths, reference.lengths)


def test_episode_stats_give_the_iteration_its_episodes_and_a_summary_row_all_since_the_last_one():
    stats = EpisodeStats(1)
    F, L = StepType.FIRST, StepType.LAST
    stats.start_iteration()
    stats.add(np.array([[L], [F]]), np.array([[2.0], [0.0]]))  # an episode of return 2 ends
    assert stats.latest()["train/episode_return"] == 2.0
    stats.start_iteration()
    stats.add(np.array([[L], [F]]), np.array([[4.0], [0.0]]))  # another, of return 4, in the next iteration
    assert stats.latest() == {"train/episode_return": 4.0, "train/episode_length": 1.0, "train/episodes": 1.0}
    assert stats.pop() == {"train/episode_return": 3.0, "train/episode_length": 1.0, "train/episodes": 2.0}
    stats.start_iteration()
    assert stats.latest() == {} and stats.pop() == {}


def test_learner_trains_the_toy_policy(components):
    carry = components.pipeline.collector.start()
    for _ in range(20):
        experience, carry = components.pipeline.collector.run(carry)
        losses = components.learner.train(experience)
    assert set(losses) == {"loss/total", "loss/reward", "train/skipped_updates"}
    assert losses["train/skipped_updates"] == 0  # the run's count, read in the same call
    result = components.evaluator.run()
    assert result["eval/average_return"] == 6.0  # always action 1: 3 steps x reward 2
