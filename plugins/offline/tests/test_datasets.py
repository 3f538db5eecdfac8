"""Datasets: the rows a Minari episode becomes, the spaces check, and the errors of opening one."""

import numpy as np
import pytest
import tensorflow as tf
from rlengine_offline.datasets import check_spaces, episode_rows, normalised_score, open_dataset

import rlengine
from rlengine import BoundedTensorSpec, Experience, StepType


def experience_spec(observation_shape=(4,), action=None):
    action = action or BoundedTensorSpec((), tf.int32, 0, 1)
    scalar = tf.TensorSpec((), tf.float32)
    return Experience(tf.TensorSpec((), tf.int32), scalar, scalar, tf.TensorSpec(observation_shape, tf.float32),
                      action, tf.TensorSpec((), tf.int32), action, (), ())


def test_an_episode_becomes_rows_in_the_engines_convention(record):
    dataset = record("test/random-v0", "CartPole-v1", 2)
    episode = next(dataset.iterate_episodes())
    steps = len(episode.rewards)
    rows = episode_rows(episode, experience_spec())
    assert rows.step_type.tolist() == [StepType.FIRST] + [StepType.MID] * (steps - 1) + [StepType.LAST]
    assert rows.discount[-1] == 0.0 and (rows.discount[:-1] == 1.0).all()  # CartPole's episodes terminate
    assert rows.reward[0] == 0.0 and np.array_equal(rows.reward[1:], episode.rewards)  # arriving at obs t
    assert np.array_equal(rows.action[:-1], episode.actions) and rows.action[-1] == 0  # LAST takes none
    assert np.array_equal(rows.prev_action[1:], episode.actions) and rows.prev_action[0] == 0
    np.testing.assert_array_equal(rows.observation, episode.observations)
    assert rows.observation.dtype == np.float32 and rows.action.dtype == np.int32


def test_a_dataset_of_another_environment_is_refused_in_one_line_naming_it(record):
    dataset = record("test/cartpole-v0", "CartPole-v1", 1)
    pendulum_action = BoundedTensorSpec((1,), tf.float32, -2.0, 2.0)
    with pytest.raises(rlengine.ConfigError) as error:
        check_spaces(dataset, tf.TensorSpec((3,), tf.float32), pendulum_action, "Pendulum-v1")
    message = str(error.value)
    assert "\n" not in message and message.startswith("dataset 'test/cartpole-v0' does not fit environment "
                                                       "'Pendulum-v1': its observations are real of shape (4,), "
                                                       "the environment's real of shape (3,); ")
    assert "leave out --env" in message
    with pytest.raises(rlengine.ConfigError, match=r"its actions are discrete 0..1, the environment's real of "
                                                   r"shape \(1,\)"):  # observations fit, actions do not
        check_spaces(dataset, tf.TensorSpec((4,), tf.float32), pendulum_action, "Pendulum-v1")
    check_spaces(dataset, tf.TensorSpec((4,), tf.float32), BoundedTensorSpec((), tf.int32, 0, 1), "CartPole-v1")


def test_datasets_open_by_id_or_path_and_a_missing_one_is_one_line(record, lean_expert, tmp_path, datasets_dir,
                                                                   monkeypatch):
    record("test/expert-v0", "CartPole-v1", 3, lean_expert, expert=True)
    assert open_dataset("test/expert-v0").total_episodes == 3
    assert open_dataset(str(datasets_dir / "test" / "expert-v0")).total_episodes == 3
    with pytest.raises(rlengine.ConfigError, match="is not a Minari dataset"):
        open_dataset(str(tmp_path))

    def unreachable(dataset_id, download=False):  # no network here: Minari's download fails as it would offline
        raise ConnectionError("no route to the dataset server")

    monkeypatch.setattr("minari.load_dataset", unreachable)
    with pytest.raises(rlengine.ConfigError, match="'test/other-v0' is not stored under .* could not be "
                                                   "downloaded .*no route.*record one with rlengine collect"):
        open_dataset("test/other-v0")


def test_the_normalised_score_is_d4rls_scale_and_absent_without_references(record, lean_expert):
    expert = record("test/expert-v0", "CartPole-v1", 2, lean_expert, expert=True)
    low, high = expert.storage.metadata["ref_min_score"], expert.storage.metadata["ref_max_score"]
    assert high == 500.0 and low < 100  # Minari's random play as the random reference
    assert normalised_score(expert, high) == pytest.approx(100.0)
    assert normalised_score(expert, low) == pytest.approx(0.0)
    assert normalised_score(record("test/random-v0", "CartPole-v1", 1), 100.0) is None
