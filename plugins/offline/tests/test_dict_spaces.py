"""Datasets of Dict observations: recorded, checked against the run's specs leaf by leaf, turned into nested
rows (discrete leaves counted from 0, as the engine's specs count them), and learned from."""

import numpy as np
import pytest
import tensorflow as tf
from dict_env_module import SPLIT_ID, lean_expert
from rlengine_offline.datasets import check_spaces, episode_rows, open_dataset

import rlengine
from rlengine import BoundedTensorSpec, Experience, StepType, cli

BOX = tf.TensorSpec((2,), tf.float32)
OBSERVATION = {"cart": BOX, "phase": BoundedTensorSpec((), tf.int32, 0, 1), "pole": BOX}
ACTION = BoundedTensorSpec((), tf.int32, 0, 1)


def experience_spec(observation=None):
    scalar = tf.TensorSpec((), tf.float32)
    return Experience(tf.TensorSpec((), tf.int32), scalar, scalar, observation or OBSERVATION, ACTION,
                      tf.TensorSpec((), tf.int32), ACTION, (), ())


def test_dict_observations_become_nested_rows_with_discrete_leaves_from_zero(record):
    dataset = record("split/random-v0", SPLIT_ID, 2)
    episode = next(dataset.iterate_episodes())
    assert sorted(episode.observations) == ["cart", "phase", "pole"]  # Minari keeps the dict
    rows = episode_rows(episode, experience_spec(), dataset.observation_space, dataset.action_space)
    steps = len(episode.rewards)
    assert rows.step_type.tolist() == [StepType.FIRST] + [StepType.MID] * (steps - 1) + [StepType.LAST]
    assert sorted(rows.observation) == ["cart", "phase", "pole"]
    np.testing.assert_array_equal(rows.observation["pole"], episode.observations["pole"])
    assert rows.observation["cart"].dtype == np.float32 and rows.observation["cart"].shape == (steps + 1, 2)
    # phase is 1, 2, 1, ... in the dataset (Discrete(2, start=1)); the engine's spec counts 0..1
    assert rows.observation["phase"].tolist() == [t % 2 for t in range(steps + 1)]
    assert np.array_equal(rows.action[:-1], episode.actions) and rows.action[-1] == 0


def test_a_dict_dataset_is_checked_leaf_by_leaf_in_one_line(record):
    dataset = record("split/random-v0", SPLIT_ID, 1)
    check_spaces(dataset, OBSERVATION, ACTION, SPLIT_ID)
    with pytest.raises(rlengine.ConfigError) as error:
        check_spaces(dataset, {"cart": BOX, "pole": BOX}, ACTION, "Other-v0")
    assert "\n" not in str(error.value)
    assert ("its observations are a dict of ['cart', 'phase', 'pole'], the environment's ['cart', 'pole']"
            in str(error.value))
    with pytest.raises(rlengine.ConfigError, match=r"its observations\['pole'\] are real of shape \(2,\), the "
                                                   r"environment's real of shape \(3,\)"):
        check_spaces(dataset, dict(OBSERVATION, pole=tf.TensorSpec((3,), tf.float32)), ACTION, "Other-v0")
    with pytest.raises(rlengine.ConfigError, match=r"its observations are a dict of .*, the environment's real of "
                                                   r"shape \(4,\)"):
        check_spaces(dataset, tf.TensorSpec((4,), tf.float32), ACTION, "CartPole-v1")


@pytest.mark.thorough  # 20 episodes recorded, 2000 updates, 2 recorded by the clone
def test_bc_learns_from_a_dataset_of_dict_observations_and_its_policy_is_recorded(record, offline_plugins, tmp_path,
                                                                                  capsys):
    record("split/expert-v0", SPLIT_ID, 20, lean_expert, expert=True)
    raw = {"train": dict(algorithm="bc", dataset="split/expert-v0", num_env_steps=2000, eval_interval=1,
                         num_eval_episodes=5, writers=[], root_dir=str(tmp_path / "run")),
           "offline": {"updates_per_iteration": 1000}}
    engine = rlengine.Engine(raw, extra_plugins=offline_plugins)
    assert engine.config.train.env == SPLIT_ID  # recovered from the dataset
    result = engine.train()
    assert result.eval_return >= 475
    policy = rlengine.load(str(tmp_path / "run"), backend="tensorflow", extra_plugins=offline_plugins)
    observation = {"cart": np.zeros(2, np.float32), "pole": np.array([0.1, 0.5], np.float32), "phase": 1}
    assert int(policy.predict(observation)[0]) == 1  # the expert pushes toward the falling pole
    assert cli.main(["collect", str(tmp_path / "run"), "--episodes", "2", "--out", "split/clone-v0"]) == 0
    assert "split/clone-v0" in capsys.readouterr().out
    clone = open_dataset("split/clone-v0")
    episode = next(clone.iterate_episodes())
    assert sorted(episode.observations) == ["cart", "phase", "pole"] and sum(episode.rewards) >= 475


@pytest.mark.thorough  # a short DQN run, then its replay written and read back
def test_a_replay_of_dict_observations_is_written_as_the_environment_holds_them(offline_plugins, tmp_path, capsys):
    root = tmp_path / "dqn"
    rlengine.Engine({"train": dict(algorithm="dqn", env=SPLIT_ID, num_envs=2, num_env_steps=256, eval_interval=0,
                                   writers=[], root_dir=str(root))}, extra_plugins=offline_plugins).train()
    assert cli.main(["collect", str(root), "--from-replay", "--out", "split/replay-v0"]) == 0
    assert "wrote dataset 'split/replay-v0'" in capsys.readouterr().out
    dataset = open_dataset("split/replay-v0")
    check_spaces(dataset, OBSERVATION, ACTION, SPLIT_ID)
    episodes = list(dataset.iterate_episodes())
    assert len(episodes) > 5  # random CartPole play: about 20 steps an episode
    for episode in episodes:
        steps = len(episode.rewards)
        assert sorted(episode.observations) == ["cart", "phase", "pole"]
        # the environment's phase, 1, 2, 1, ... from the reset (Discrete(2, start=1)), not the engine's 0, 1
        assert episode.observations["phase"].tolist() == [t % 2 + 1 for t in range(steps + 1)]
        assert np.all(np.abs(episode.observations["cart"][0]) <= 0.05)  # CartPole's reset: within +-0.05
        assert episode.terminations[-1] and not episode.truncations.any()
        rows = episode_rows(episode, experience_spec(), dataset.observation_space, dataset.action_space)
        assert rows.observation["phase"].tolist() == [t % 2 for t in range(steps + 1)]  # read back from 0
