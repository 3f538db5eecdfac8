"""rlengine.write_atomically: a file is its old content or all of the new one, and no temporary file stays."""

import os
import stat

import pytest

import rlengine
from rlengine import files


def _names(directory):
    return sorted(os.listdir(directory))


def test_text_is_written_as_utf8_with_newlines_as_given(tmp_path):
    path = str(tmp_path / "notes.txt")
    assert rlengine.write_atomically(path, "α\nβ\r\n") is True
    assert open(path, "rb").read() == "α\nβ\r\n".encode("utf-8")
    assert _names(tmp_path) == ["notes.txt"]


def test_bytes_are_written_as_they_are(tmp_path):
    path = str(tmp_path / "blob")
    rlengine.write_atomically(path, b"\x00\xff\n")
    assert open(path, "rb").read() == b"\x00\xff\n"


def test_an_existing_file_is_replaced_whole(tmp_path):
    path = str(tmp_path / "config.toml")
    rlengine.write_atomically(path, "a long first version\n" * 10)
    rlengine.write_atomically(path, "short\n")
    assert open(path).read() == "short\n"
    assert _names(tmp_path) == ["config.toml"]


def test_a_write_that_fails_midway_leaves_the_old_file_and_no_temporary_file(tmp_path, monkeypatch):
    path = str(tmp_path / "best.toml")
    rlengine.write_atomically(path, "old\n")
    real_fsync = os.fsync

    def fails_after_the_data_is_written(fd):
        if os.fstat(fd).st_size == len("new, longer content\n"):  # the temporary file, written in full
            raise OSError(28, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fails_after_the_data_is_written)
    with pytest.raises(OSError, match="No space left"):
        rlengine.write_atomically(path, "new, longer content\n")
    assert open(path).read() == "old\n"
    assert _names(tmp_path) == ["best.toml"]


def test_a_failed_rename_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "a-directory"
    target.mkdir()
    with pytest.raises(OSError):
        rlengine.write_atomically(str(target), "cannot replace a directory")
    assert _names(tmp_path) == ["a-directory"]


def test_keep_existing_creates_once_and_never_overwrites(tmp_path):
    path = str(tmp_path / "state-key")
    assert files.write_atomically(path, "first\n", mode=0o600, replace=False) is True
    assert files.write_atomically(path, "second\n", mode=0o600, replace=False) is False
    assert open(path).read() == "first\n"
    assert _names(tmp_path) == ["state-key"]


def test_mode_sets_the_new_file_permissions(tmp_path):
    path = str(tmp_path / "private")
    files.write_atomically(path, "secret\n", mode=0o600)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_a_relative_path_in_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    files.write_atomically("here.txt", "x")
    assert open(tmp_path / "here.txt").read() == "x"
    assert _names(tmp_path) == ["here.txt"]
