"""A full disk (ENOSPC, or a full quota, EDQUOT) under ``rlengine tune``: one line naming the file and the fix,
the journal readable, and the same command resuming the study once there is space.

The disk is simulated: ``os.write`` on the journal file takes half of what it is given, then fails, as a
write that fills the disk does; from then on every write to it fails, until the test frees the space."""

import errno
import json
import os

import optuna
import pytest
from rlengine_optuna import study as studies
from rlengine_optuna import tuner
from rlengine_optuna.journal import JournalFile, TuneDiskFull
from rlengine_optuna.tuner import Tuner, TuneSettings

from rlengine import cli, hookimpl

COMPLETE = optuna.trial.TrialState.COMPLETE


class FullDisk:
    """``os.write`` with the disk under ``path`` filling at the first write of data holding every one of
    ``marks``; ``free()`` makes room again."""

    def __init__(self, monkeypatch, path, *marks, code=errno.ENOSPC):
        self.path, self.marks, self.code, self.full = path, marks, code, False
        self.real_write = os.write
        self.monkeypatch = monkeypatch
        monkeypatch.setattr(os, "write", self.write)

    def write(self, fd, data):
        if not self._is_journal(fd) or not (self.full or all(mark in bytes(data) for mark in self.marks)):
            return self.real_write(fd, data)
        if self.full:
            raise OSError(self.code, os.strerror(self.code))
        self.full = True
        return self.real_write(fd, bytes(data)[:len(data) // 2])  # the torn half a full disk leaves

    def free(self):
        self.monkeypatch.setattr(os, "write", self.real_write)

    def _is_journal(self, fd):
        try:
            mine, journal = os.fstat(fd), os.stat(self.path)
        except OSError:
            return False
        return (mine.st_dev, mine.st_ino) == (journal.st_dev, journal.st_ino)


def entries(path):
    """Every line of the journal as JSON: a torn line would raise here, as it would break the next load."""
    with open(path, "rb") as f:
        data = f.read()
    assert data.endswith(b"\n"), data[-80:]
    return [json.loads(line) for line in data.splitlines()]


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT])
def test_an_append_on_a_full_disk_leaves_the_journal_as_it_was(tmp_path, monkeypatch, code):
    path = str(tmp_path / studies.STUDY_FILE)
    backend = JournalFile(path)
    backend.append_logs([{"op_code": 0, "n": 1}])
    before = open(path, "rb").read()
    disk = FullDisk(monkeypatch, path, code=code)

    with pytest.raises(TuneDiskFull) as info:
        backend.append_logs([{"op_code": 0, "n": 2}, {"op_code": 0, "n": 3}])

    assert open(path, "rb").read() == before  # the torn half cut away
    assert info.value.errno == code and repr(path) in str(info.value) and "free some disk space" in str(info.value)
    disk.free()  # the next append follows the whole ones
    backend.append_logs([{"op_code": 0, "n": 4}])
    assert [e["n"] for e in entries(path)] == [1, 4]


def test_a_full_disk_at_the_fsync_also_leaves_nothing_behind(tmp_path, monkeypatch):
    path = str(tmp_path / studies.STUDY_FILE)
    backend = JournalFile(path)
    backend.append_logs([{"op_code": 0, "n": 1}])
    real_fsync = os.fsync
    failed = []

    def fsync(fd):  # the write went to the page cache; the file system finds no room when it is synced
        if not failed:
            failed.append(fd)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(TuneDiskFull):
        backend.append_logs([{"op_code": 0, "n": 2}])
    assert [e["n"] for e in entries(path)] == [1]


@pytest.mark.thorough  # two short studies (about 6 s): this package's tox env runs it
def test_a_tune_on_a_full_disk_stops_with_one_line_and_the_same_command_resumes(kit_settings, monkeypatch):
    settings = kit_settings(trials=3)
    journal = os.path.join(settings["tune_dir"], studies.STUDY_FILE)
    os.makedirs(settings["tune_dir"])
    open(journal, "wb").close()
    # the disk fills while the second trial reports an evaluation, inside a hook of its run
    disk = FullDisk(monkeypatch, journal, b'"intermediate_value"', b'"trial_id":1,')
    with pytest.raises(TuneDiskFull) as info:
        Tuner(TuneSettings(**settings)).run()

    message = str(info.value)
    assert "\n" not in message and repr(journal) in message and "No space left on device" in message
    assert "free some disk space, then resume the study with the same command" in message
    assert entries(journal)  # whole lines only: the next load reads them all

    disk.free()
    result = Tuner(TuneSettings(**settings)).run()
    trials = result.study.trials
    assert [t.state for t in trials].count(COMPLETE) == 3
    assert trials[1].state == optuna.trial.TrialState.FAIL  # cut short by the full disk, queued again
    assert trials[1].user_attrs["reason"].startswith("interrupted: its tune process ended")


def test_the_command_line_says_it_in_one_line_with_the_resume_command(capsys, tmp_path, monkeypatch):
    tune_dir = tmp_path / "t"
    journal = str(tune_dir / studies.STUDY_FILE)

    def full(self):
        raise TuneDiskFull(errno.ENOSPC, journal, "the study's journal")

    monkeypatch.setattr(tuner.Tuner, "run", full)
    code = cli.main(["tune", "--param", "ppo.gamma=float:0.9:0.99", "--tune-dir", str(tune_dir)])
    out, err = capsys.readouterr()

    assert code == 1 and out == ""
    [line] = err.strip().splitlines()
    assert line.startswith("rlengine: error: No space left on device while writing the study's journal ")
    assert repr(journal) in line
    assert line.endswith(f"; resume with: rlengine tune --param ppo.gamma=float:0.9:0.99 --tune-dir {tune_dir}")


class FullDiskInTheRun:
    """A run whose checkpoint write finds the disk full at its first iteration."""

    def __init__(self, path):
        self.path = path

    @hookimpl
    def rlengine_iteration_end(self, run, iteration):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), self.path)


def test_a_full_disk_in_a_trials_run_stops_the_tune_naming_the_file_not_failing_the_trial(kit_settings):
    settings = kit_settings()
    written = os.path.join(settings["tune_dir"], "trial-0", "checkpoints", "ckpt-1.index")
    settings["extra_plugins"] = (*settings["extra_plugins"], ("full", FullDiskInTheRun(written)))

    with pytest.raises(TuneDiskFull) as info:
        Tuner(TuneSettings(**settings)).run()

    assert f"while writing a file of the tune {written!r}" in str(info.value)
    storage = studies.open_storage(settings["tune_dir"])
    study = optuna.load_study(study_name=studies.STUDY_NAME, storage=storage)
    assert [t.state for t in study.trials] == [optuna.trial.TrialState.RUNNING]  # queued again on resuming
