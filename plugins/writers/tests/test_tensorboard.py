import glob
import os

import numpy as np
import pytest
import tensorflow as tf
from rlengine_writers.tensorboard_writer import TensorBoardConfig, TensorBoardWriter
from tensorboard import data_compat


def _scalars(logdir):
    """(tag, step, value) of every summary in the event files under logdir, as TensorBoard reads them."""
    found = []
    for path in sorted(glob.glob(os.path.join(logdir, "events.out.tfevents.*"))):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                value = data_compat.migrate_value(value)
                assert value.metadata.plugin_data.plugin_name == "scalars"
                found.append((value.tag, event.step, float(tf.make_ndarray(value.tensor))))
    return found


def test_scalars_are_written_at_env_steps(tmp_path):
    writer = TensorBoardWriter(str(tmp_path), TensorBoardConfig(), total_env_steps=1000)
    writer.write(
        {
            "iteration": 1,
            "env_steps": 256,
            "wall_time": 1.0,
            "train/episode_return": 10.0,
            "loss/policy": np.float32(0.5),
        }
    )
    writer.write(
        {
            "iteration": 2,
            "env_steps": 512,
            "wall_time": 2.0,
            "train/episode_return": 12.0,
            "eval/average_return": tf.constant(30.0),
            "note": "text is skipped",
        }
    )
    writer.flush()
    writer.close()
    writer.close()  # safe twice
    scalars = _scalars(str(tmp_path / "tensorboard"))
    assert sorted(scalars) == sorted(
        [
            ("train/episode_return", 256, 10.0),
            ("loss/policy", 256, 0.5),
            ("train/episode_return", 512, 12.0),
            ("eval/average_return", 512, 30.0),
        ]
    )


def test_config_validation():
    assert TensorBoardConfig().flush_secs == 10
    for bad in [0, -1, 1.5, "10"]:
        with pytest.raises((TypeError, ValueError)):
            TensorBoardConfig(flush_secs=bad)


def test_no_event_file_before_the_first_row(tmp_path):
    # A run refused after the writers were built (e.g. its checkpoint does not fit) leaves no file.
    writer = TensorBoardWriter(str(tmp_path), TensorBoardConfig())
    writer.resume_from(0)
    writer.flush()
    writer.close()
    assert os.listdir(tmp_path) == []
    with pytest.raises(ValueError, match="closed"):
        writer.write({"iteration": 1, "env_steps": 8, "wall_time": 0.0})


def test_a_resumed_run_continues_at_its_env_steps_in_a_new_event_file_and_the_old_one_stays(tmp_path):
    def rows(writer, *steps):
        for step in steps:
            writer.write({"iteration": step // 8, "env_steps": step, "wall_time": 0.0, "loss/total": float(step)})
        writer.close()

    # killed after its checkpoint at 16; kept referenced: a new process names its file anew (pid), but here
    # a writer made in the same second could reuse a freed one's object id, and with it the file name
    killed_writer = TensorBoardWriter(str(tmp_path), TensorBoardConfig())
    rows(killed_writer, 8, 16, 24)
    killed = glob.glob(str(tmp_path / "tensorboard" / "events.out.tfevents.*"))
    resumed = TensorBoardWriter(str(tmp_path), TensorBoardConfig())
    resumed.resume_from(16)
    rows(resumed, 24, 32)

    files = sorted(glob.glob(str(tmp_path / "tensorboard" / "events.out.tfevents.*")))
    assert len(killed) == 1 and len(files) == 2 and killed[0] in files
    new = [path for path in files if path != killed[0]][0]
    assert [event.step for event in tf.compat.v1.train.summary_iterator(new) if event.summary.value] == [24, 32]
    assert [step for _, step, _ in _scalars(str(tmp_path / "tensorboard"))].count(24) == 2  # the old row stays
    del killed_writer
