"""train.init_from: a run that starts from another run's checkpoint; train.dataset starting an online replay."""

import os

import numpy as np
import pytest
import tensorflow as tf

from rlengine import ConfigError, StepType, hookimpl
from rlengine.run.checkpoints.store import newest_checkpoint
from rlengine.run.engine import Engine
from rlengine.testing import testing_plugin, tiny_config

EPISODE = 4  # counting's episodes: 4 steps, 5 rows


def _run(config, *plugins):
    extra = [("testing", testing_plugin()), *[(f"p{i}", p) for i, p in enumerate(plugins)]]
    return Engine(config, extra_plugins=extra).train()


def _q(root_dir):
    return tf.train.load_variable(newest_checkpoint(str(root_dir)), "algorithm/q/.ATTRIBUTES/VARIABLE_VALUE")


class FirstIteration:
    """Records what the run holds after its first iteration."""

    def __init__(self):
        self.q = self.replay_rows = self.env_steps = None

    @hookimpl
    def rlengine_iteration_end(self, run, iteration, metrics):
        if iteration == 1:
            self.q = run.algorithm.q.numpy()
            self.replay_rows = int(run.internals.replay.num_rows())
            self.env_steps = metrics["env_steps"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A toy-q run that has learnt its action values (about [1, 2])."""
    root = tmp_path_factory.mktemp("source")
    _run(tiny_config(str(root), algorithm="toy-q", num_env_steps=96, eval_interval=0))
    return root


def test_a_run_starts_from_the_weights_of_another_and_counts_afresh(tmp_path, trained):
    learnt, files = _q(trained), sorted(os.listdir(trained / "checkpoints"))
    assert abs(learnt[1] - 2.0) < 0.2  # the source really learnt
    fresh, started = FirstIteration(), FirstIteration()
    _run(tiny_config(str(tmp_path / "fresh"), algorithm="toy-q", num_env_steps=8, eval_interval=0), fresh)
    _run(tiny_config(str(tmp_path / "tuned"), algorithm="toy-q", num_env_steps=8, eval_interval=0,
                     init_from=str(trained)), started)
    assert started.env_steps == fresh.env_steps == 8  # counters start from 0
    assert np.abs(started.q - learnt).max() < 0.1  # a few updates on from the source's values
    assert np.abs(fresh.q - learnt).max() > 0.5  # where a fresh run is far from them
    assert sorted(os.listdir(trained / "checkpoints")) == files  # the source is only read


class Interrupted(Exception):
    """Stands in for a crash right after a checkpoint."""


class StopAfterCheckpoint:
    @hookimpl
    def rlengine_checkpoint_saved(self, run, iteration, path):
        if iteration == 2:
            raise Interrupted(path)


def test_a_fine_tuning_run_resumes_its_own_checkpoints_without_the_source(tmp_path, trained):
    import shutil

    source = tmp_path / "source"
    shutil.copytree(trained, source)
    config = tiny_config(str(tmp_path / "tuned"), algorithm="toy-q", num_env_steps=32, eval_interval=0,
                         checkpoint_interval=1, init_from=str(source))
    with pytest.raises(Exception) as err:
        _run(config, StopAfterCheckpoint())
    assert "Interrupted" in repr(err.value) or isinstance(err.value.__cause__, Interrupted)
    shutil.rmtree(source)  # resuming must not need it
    assert _run(config).env_steps == 32


def test_init_from_another_network_is_one_line_naming_the_key(tmp_path, trained):
    config = tiny_config(str(tmp_path / "other"), algorithm="toy", num_env_steps=8, eval_interval=0,
                         init_from=str(trained))
    with pytest.raises(ConfigError) as err:
        _run(config)
    message = str(err.value)
    assert "\n" not in message and "train.init_from" in message and "does not fit this run" in message


@pytest.mark.parametrize("source", ["missing", "empty"])
def test_init_from_a_directory_without_checkpoints_is_refused_before_anything_is_written(tmp_path, source):
    (tmp_path / "empty").mkdir()
    root = tmp_path / "run"
    with pytest.raises(ConfigError, match="train.init_from") as err:
        _run(tiny_config(str(root), algorithm="toy-q", init_from=str(tmp_path / source)))
    assert "\n" not in str(err.value)
    assert not os.path.exists(root / "checkpoints")


class CountingDataset:
    """Reads the dataset "counting-episodes": ``episodes`` whole episodes of the counting environment."""

    def __init__(self, episodes):
        self.episodes = episodes

    @hookimpl
    def rlengine_dataset_rows(self, dataset, config, specs, rows_spec):
        if dataset != "counting-episodes":
            return None
        rows = self.episodes * (EPISODE + 1)
        chunk = tf.nest.map_structure(lambda s: np.zeros((rows, *s.shape), s.dtype.as_numpy_dtype), rows_spec)
        step_type = np.tile([StepType.FIRST] + [StepType.MID] * (EPISODE - 1) + [StepType.LAST], self.episodes)
        return iter([chunk._replace(step_type=step_type.astype(np.int32), action=np.ones(rows, np.int32),
                                    reward=np.where(step_type == StepType.FIRST, 0.0, 2.0).astype(np.float32))])


def test_dataset_rows_hook_starts_the_replay_of_a_run_that_steps_environments(tmp_path, trained):
    without, seen = FirstIteration(), FirstIteration()
    _run(tiny_config(str(tmp_path / "without"), algorithm="toy-q", num_env_steps=8, eval_interval=0,
                     init_from=str(trained)), without)
    _run(tiny_config(str(tmp_path / "tuned"), algorithm="toy-q", num_env_steps=8, eval_interval=0,
                     init_from=str(trained), dataset="counting-episodes"), CountingDataset(6), seen)
    assert seen.replay_rows == 6 * (EPISODE + 1) + without.replay_rows  # the dataset's rows, then the run's own
    larger, held = FirstIteration(), 2 * 32  # toy-q's replay: 2 rings of 32 rows
    _run(tiny_config(str(tmp_path / "larger"), algorithm="toy-q", num_env_steps=8, eval_interval=0,
                     init_from=str(trained), dataset="counting-episodes"), CountingDataset(40), larger)
    assert larger.replay_rows == held  # a dataset larger than the replay: its newest rows, then the run's
    assert seen.env_steps == without.env_steps == 8


def test_a_dataset_with_an_on_policy_algorithm_online_is_refused_in_one_line(tmp_path, trained):
    config = tiny_config(str(tmp_path / "run"), algorithm="toy", num_env_steps=8, pipeline="sync",
                         dataset="counting-episodes", init_from=str(trained))
    with pytest.raises(ConfigError, match="on-policy") as err:
        _run(config, CountingDataset(2))
    assert "\n" not in str(err.value)


@pytest.mark.first_party  # the transformers plugin's normalize
def test_a_dataset_beside_observation_transformers_is_refused_in_one_line(tmp_path, trained):
    config = tiny_config(str(tmp_path / "run"), algorithm="toy-q", num_env_steps=8, transformers=["normalize"],
                         dataset="counting-episodes", init_from=str(trained))
    with pytest.raises(ConfigError, match="leave train.transformers empty") as err:
        _run(config, CountingDataset(2))
    assert "\n" not in str(err.value)
