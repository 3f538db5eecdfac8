import errno
import json
import math
import os

import numpy as np
import pytest
import tensorflow as tf
from rlengine_writers.jsonl_writer import JsonlConfig, JsonlWriter


def _rows(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def _row(i, **extra):
    return {"iteration": i, "env_steps": 256 * i, "wall_time": 0.5 * i, **extra}


def test_rows_are_flushed_on_every_write(tmp_path):
    writer = JsonlWriter(str(tmp_path), JsonlConfig())
    writer.write(_row(1, **{"train/episode_return": 21.0, "loss/policy": 0.25}))
    # Readable before flush() or close(): a crash keeps every written row.
    rows = _rows(tmp_path / "metrics.jsonl")
    assert rows == [
        {
            "iteration": 1,
            "env_steps": 256,
            "wall_time": 0.5,
            "train/episode_return": 21.0,
            "loss/policy": 0.25,
        }
    ]
    assert list(rows[0])[:3] == ["iteration", "env_steps", "wall_time"]
    writer.close()
    writer.close()  # safe twice


def test_values_become_plain_json(tmp_path):
    writer = JsonlWriter(str(tmp_path), JsonlConfig())
    writer.write(
        _row(
            2,
            **{
                "a/np_float": np.float32(1.5),
                "a/np_int": np.int64(7),
                "a/tensor": tf.constant(2.5),
                "a/array": np.array([3.0]),
                "a/bool": True,
                "a/nan": float("nan"),
                "a/inf": np.float64(-np.inf),
                "a/tensor_nan": tf.constant(math.nan),
            },
        )
    )
    writer.close()
    text = (tmp_path / "metrics.jsonl").read_text()
    assert "NaN" not in text and "Infinity" not in text
    (row,) = _rows(tmp_path / "metrics.jsonl")
    assert row["a/np_float"] == 1.5 and row["a/np_int"] == 7 and isinstance(row["a/np_int"], int)
    assert row["a/tensor"] == 2.5 and row["a/array"] == 3.0 and row["a/bool"] == 1
    assert row["a/nan"] is None and row["a/inf"] is None and row["a/tensor_nan"] is None


def test_resumed_run_appends(tmp_path):
    first = JsonlWriter(str(tmp_path), JsonlConfig())
    first.write(_row(1))
    first.write(_row(2))
    first.close()
    second = JsonlWriter(str(tmp_path), JsonlConfig())
    second.write(_row(3))
    second.close()
    assert [r["iteration"] for r in _rows(tmp_path / "metrics.jsonl")] == [1, 2, 3]


def test_torn_last_line_does_not_swallow_next_row(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"iteration": 1}\n{"iteration": 2, "env_st')
    writer = JsonlWriter(str(tmp_path), JsonlConfig())
    writer.write(_row(3))
    writer.close()
    lines = path.read_text().splitlines()
    assert json.loads(lines[-1])["iteration"] == 3 and len(lines) == 3


def test_config(tmp_path):
    writer = JsonlWriter(str(tmp_path), JsonlConfig(filename="logs/m.jsonl"))
    writer.write(_row(1))
    writer.close()
    assert _rows(tmp_path / "logs" / "m.jsonl")[0]["iteration"] == 1
    for bad in ["", "/tmp/x.jsonl", "../x.jsonl", 3]:
        with pytest.raises((TypeError, ValueError)):
            JsonlConfig(filename=bad)


def test_nothing_is_created_before_the_first_row(tmp_path):
    # A run refused after the writers were built (e.g. its checkpoint does not fit) leaves no file.
    writer = JsonlWriter(str(tmp_path / "run"), JsonlConfig(filename="logs/m.jsonl"))
    writer.resume_from(0)
    writer.close()
    assert not (tmp_path / "run").exists()
    with pytest.raises(ValueError, match="closed"):
        writer.write(_row(1))


def test_resume_leaves_a_file_with_nothing_to_drop_as_it_is(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps(_row(i)) + "\n" for i in (1, 2)))
    inode = path.stat().st_ino
    writer = JsonlWriter(str(tmp_path), JsonlConfig())
    writer.resume_from(512)
    writer.close()
    assert path.stat().st_ino == inode and [r["iteration"] for r in _rows(path)] == [1, 2]


class _DiskFills:
    """The writer's file, on a disk that fills after ``room`` more bytes: a write past it lands in part."""

    def __init__(self, file, room):
        self.file, self.room = file, room

    def write(self, text):
        self.file.write(text[:self.room])
        self.file.flush()
        if len(text) > self.room:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # as write() says it: no file named
        self.room -= len(text)

    def flush(self):
        self.file.flush()

    def close(self):
        self.file.close()


def test_a_full_disk_names_the_file_and_leaves_no_torn_row(tmp_path):
    writer = JsonlWriter(str(tmp_path), JsonlConfig())
    writer.write(_row(1))
    writer._file = _DiskFills(writer._file, room=10)

    with pytest.raises(OSError) as raised:
        writer.write(_row(2))

    assert raised.value.errno == 28 and raised.value.filename == str(tmp_path / "metrics.jsonl")
    assert _rows(tmp_path / "metrics.jsonl") == [_row(1)]  # the row written in part is cut
    writer.write(_row(3))  # space again: the file is reopened
    assert _rows(tmp_path / "metrics.jsonl") == [_row(1), _row(3)]
    writer.close()
