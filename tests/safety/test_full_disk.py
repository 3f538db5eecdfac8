"""A full disk (ENOSPC, or a full quota, EDQUOT) wherever the engine writes: one line naming the path and the
fix, nothing lost (the older checkpoints intact, no half-written file), and no temporary file or folder left.

TensorFlow reports a full disk while saving a checkpoint as its own error with its op's text (and left its
``ckpt-N_temp`` folder behind); Python's writes report it as an ``OSError`` that may name no file."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from pathlib import Path

import pytest
import tensorflow as tf

from rlengine import hookimpl
from rlengine.errors import os_error_line
from rlengine.files import write_atomically, writing
from rlengine.run.checkpoints.choice import is_sound
from rlengine.run.checkpoints.files import marked_checkpoints
from rlengine.run.engine import Engine
from rlengine.testing import testing_plugin, tiny_config

#: What a killed or failed write may leave: TensorFlow's temporary folders, the atomic writes' temporary
#: files, a best checkpoint's staging files
LEFTOVER_MARKS = ("_temp", ".tmp-", ".staging-")


def _engine(root: Path, *plugins: tuple) -> Engine:
    """The toy run of 4 iterations, a checkpoint at each, no evaluation (so no best checkpoint)."""
    return Engine(tiny_config(str(root), num_env_steps=32, checkpoint_interval=1, keep_checkpoints=5,
                              eval_interval=0), extra_plugins=[("testing", testing_plugin()), *plugins])


def leftovers(root: Path) -> list:
    return sorted(str(p) for p in root.rglob("*") if any(mark in p.name for mark in LEFTOVER_MARKS))


def checkpoint_numbers(root: Path) -> list:
    return sorted(n for n, _, _ in marked_checkpoints(str(root / "checkpoints")))


def _assert_one_disk_full_line(error: OSError, root: Path) -> str:
    assert error.errno in (errno.ENOSPC, errno.EDQUOT) and str(error.filename).startswith(str(root)), repr(error)
    line = os_error_line(error)
    assert "\n" not in line and repr(str(error.filename)) in line, line
    assert "free some disk space" in line and "choose another --root-dir" in line, line
    return line


def test_a_full_disk_while_tensorflow_saves_a_checkpoint_is_one_line_and_loses_nothing(tmp_path, monkeypatch):
    root = tmp_path / "run"
    real_write = tf.train.Checkpoint.write

    def full_disk_from_the_third(self, prefix, *args, **kwargs):  # fails as TensorFlow does, its files made
        if not prefix.endswith(("ckpt-3", "ckpt-4")):
            return real_write(self, prefix, *args, **kwargs)
        os.makedirs(f"{prefix}_temp", exist_ok=True)
        Path(f"{prefix}_temp", "part-00000-of-00001.data-00000-of-00001.tempstate1").write_bytes(b"\0" * 10)
        Path(f"{prefix}.index").write_bytes(b"half")
        raise tf.errors.ResourceExhaustedError(None, None, f"{prefix}_temp/part-00000; No space left on device "
                                                           "[Op:SaveV2]")

    monkeypatch.setattr(tf.train.Checkpoint, "write", full_disk_from_the_third)
    with pytest.raises(OSError) as raised:
        _engine(root).train()

    _assert_one_disk_full_line(raised.value, root)
    assert raised.value.filename == str(root / "checkpoints" / "ckpt-3")
    assert leftovers(root) == [] and not (root / "checkpoints" / "ckpt-3.index").exists()
    assert checkpoint_numbers(root) == [1, 2] and is_sound(str(root / "checkpoints" / "ckpt-2"))
    monkeypatch.setattr(tf.train.Checkpoint, "write", real_write)
    assert _engine(root).train().iterations == 4  # space again: the same run resumes


def test_a_full_disk_in_an_atomic_write_names_the_file_and_keeps_the_old_content(tmp_path, monkeypatch):
    path = tmp_path / "config.toml"
    path.write_text("old\n")

    def half_then_full(tmp, raw, mode):
        Path(tmp).write_bytes(raw[:2])
        raise OSError(errno.EDQUOT, os.strerror(errno.EDQUOT))  # as a write() raises it: no file named

    monkeypatch.setattr("rlengine.files._write_synced", half_then_full)
    with pytest.raises(OSError) as raised:
        write_atomically(str(path), "new content\n")

    assert raised.value.errno == errno.EDQUOT and raised.value.filename == str(path)
    assert path.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["config.toml"]


def test_other_errors_pass_through_writing_unchanged(tmp_path):
    made = tmp_path / "ckpt-1_temp"
    made.mkdir()
    with pytest.raises(ValueError, match="^not a disk$"):
        with writing(str(tmp_path / "ckpt-1"), str(tmp_path / "ckpt-1_temp*")):
            raise ValueError("not a disk")
    assert made.exists()  # only a full disk's leftovers are removed: another error may need them looked at


# -- a real full disk: a small tmpfs (root only) --------------------------------------------------------------

@contextlib.contextmanager
def small_disk(where: Path, size: str = "2m"):
    where.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip() or mounted.returncode}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(disk: Path) -> Path:
    """A file taking every free byte of ``disk``."""
    filler = disk / "filler"
    with open(filler, "wb") as f:
        with contextlib.suppress(OSError):
            while True:
                f.write(b"\0" * 65536)
                f.flush()
    return filler


class FillsTheDisk:
    """Takes every free byte of ``disk`` once checkpoint 2 is saved."""

    def __init__(self, disk: Path):
        self.disk, self.filler = disk, None

    @hookimpl
    def rlengine_checkpoint_saved(self, iteration):
        if iteration == 2:
            self.filler = fill(self.disk)


def test_a_real_full_disk_stops_the_run_with_one_line_and_resumes_once_there_is_space(tmp_path):
    with small_disk(tmp_path / "disk") as disk:
        root, filling = disk / "run", FillsTheDisk(disk)
        with pytest.raises(OSError) as raised:
            _engine(root, ("fills", filling)).train()

        _assert_one_disk_full_line(raised.value, root)
        assert leftovers(root) == [] and checkpoint_numbers(root) == [1, 2]
        assert is_sound(str(root / "checkpoints" / "ckpt-2"))
        filling.filler.unlink()
        assert _engine(root).train().iterations == 4


def test_a_full_disk_under_a_writer_names_the_file_tensorflow_was_writing(tmp_path):
    events = tmp_path / "tensorboard" / "events.out.tfevents.1.host.2.3.v2"
    error = tf.errors.ResourceExhaustedError(None, None, f"{events}; No space left on device")
    with pytest.raises(OSError) as raised:
        with writing(str(tmp_path)):  # a directory: the file its error names is the one named
            raise error
    assert raised.value.errno == errno.ENOSPC and raised.value.filename == str(events)
    with pytest.raises(OSError) as raised:
        with writing(str(tmp_path / "checkpoints" / "ckpt-3")):  # a file's own name beats a temporary one
            raise tf.errors.ResourceExhaustedError(None, None, f"{tmp_path}/ckpt-3_temp/part; No space left on device")
    assert raised.value.filename == str(tmp_path / "checkpoints" / "ckpt-3")
