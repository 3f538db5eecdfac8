"""The run directory is never lost or mixed up ("Never lose a run, part two", items 2, 3 and 5).

* one writer per root dir: a second ``train`` is refused naming the process that trains it, and the
  lock goes with that process, even when it is killed;
* nothing is written before the run is known to start: a refused or failed start leaves the root dir
  byte for byte as it was (and a root dir it had to create does not exist afterwards);
* only rlengine's own directories: a root dir holding the user's files is refused naming one of them.
"""

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from rlengine import hookimpl
from rlengine.cli import main
from rlengine.errors import ConfigError, NotARunDirectory, RLEngineError, RunDirBusy
from rlengine.plugin import manager
from rlengine.run.checkpoints.rundir import LOCK_FILE, MARKER_FILE, claimed
from rlengine.run.engine import Engine
from rlengine.testing import CountingEnv, MemoryWriter, testing_plugin, tiny_config
from tests.plugin_packages import cli_with_testing_kit


def _engine(root, *extra, force=False, **train):
    return Engine(tiny_config(str(root), **train), extra_plugins=[("testing", testing_plugin()), *extra],
                  force=force)


def snapshot(root):
    """Every directory and file under ``root`` with the files' bytes; None when ``root`` does not exist."""
    if not os.path.lexists(root):
        return None
    found = {}
    for directory, _, files in os.walk(root):
        relative = os.path.relpath(directory, root)
        found[relative + os.sep] = None
        for name in files:
            with open(os.path.join(directory, name), "rb") as f:
                found[os.path.join(relative, name)] = f.read()
    return found


def one_line(error: BaseException) -> str:
    text = str(error)
    assert "\n" not in text and text, text
    return text


@pytest.fixture
def cli_with_testing(monkeypatch, capsys):
    """``rlengine ARGV`` in-process with the testing kit loaded: (exit status, stderr lines)."""
    real = manager.build_plugins

    def build(disabled=(), extra_plugins=(), load_entry_points=True):
        return real(disabled=disabled, extra_plugins=[("testing", testing_plugin()), *extra_plugins],
                    load_entry_points=load_entry_points)

    monkeypatch.setattr(manager, "build_plugins", build)

    def run(*argv):
        status = main(list(argv))
        return status, capsys.readouterr().err.strip().splitlines()

    return run


# -- one writer per run dir --------------------------------------------------------------------------
ENTRY_SCRIPT = cli_with_testing_kit('''
    class Announce:
        @hookimpl
        def rlengine_iteration_end(self, iteration):
            if iteration == 1:
                print("test: iterating", flush=True)
''')

TRAIN = ["train", "--algorithm", "toy", "--env", "counting", "--num-env-steps", "1000000000",
         "--set", 'train.writers=["jsonl"]', "--set", "train.eval_interval=0", "--set", "train.checkpoint_interval=5"]


class Training:
    """``rlengine train`` (with the testing kit) in a subprocess, its output collected as it comes."""

    def __init__(self, tmp_path, root):
        script = tmp_path / "rlengine_with_testing.py"
        script.write_text(ENTRY_SCRIPT)
        environ = {**os.environ, "PYTHONUNBUFFERED": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}
        self.popen = subprocess.Popen([sys.executable, str(script), *TRAIN, "--root-dir", str(root)], cwd=tmp_path,
                                      env=environ, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.popen.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, condition, timeout=180.0):
        deadline = time.monotonic() + timeout
        while not condition():
            if self.popen.poll() is not None or time.monotonic() > deadline:
                self.popen.kill()
                pytest.fail(f"not ready (exit {self.popen.poll()}):\n" + "\n".join(self.lines))
            time.sleep(0.05)

    def stop(self, signal_number=signal.SIGTERM) -> int:
        self.popen.send_signal(signal_number)
        try:
            return self.popen.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            raise


def _whole_rows(path) -> int:
    return path.read_bytes().count(b"\n")  # the file is being written: a last line may be half there


def _rows(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.mark.slow  # the CLI end to end (a fresh process, ~10 s); the mechanism has a fast in-process test
@pytest.mark.first_party  # the jsonl writer
def test_a_second_training_into_a_root_dir_being_trained_is_refused_naming_the_process(tmp_path, cli_with_testing):
    root = tmp_path / "run"
    first = Training(tmp_path, root)
    try:
        first.wait_for(lambda: any("test: iterating" in line for line in first.lines))
        metrics = root / "metrics.jsonl"
        inode = os.stat(metrics).st_ino

        status, lines = cli_with_testing(*TRAIN, "--root-dir", str(root))

        assert status == 2 and len(lines) == 1, lines
        assert lines[0].startswith(f"rlengine: error: {root} is being trained by process {first.popen.pid} (since ")
        assert lines[0].endswith("; wait for it, stop it, or choose another --root-dir")
        assert os.stat(metrics).st_ino == inode  # not rewritten under the running training
        rows_before = _whole_rows(metrics)
        first.wait_for(lambda: _whole_rows(metrics) > rows_before + 2)  # it goes on writing into the same file
    finally:
        status = first.stop()
    assert status == 143, "\n".join(first.lines)
    rows = _rows(metrics)
    assert [row["iteration"] for row in rows] == list(range(1, len(rows) + 1))  # every row once, none lost


@pytest.mark.thorough  # the root suite leaves it out for time; this package's tox env runs it
@pytest.mark.first_party  # the jsonl writer
def test_the_lock_goes_with_a_killed_training_and_the_root_dir_trains_again(tmp_path, cli_with_testing):
    root = tmp_path / "run"
    first = Training(tmp_path, root)
    first.wait_for(lambda: (root / "checkpoints" / "ckpt-5.complete").exists())
    first.stop(signal.SIGKILL)
    assert (root / LOCK_FILE).exists()  # left behind by kill -9: it needs no cleaning up

    status, lines = cli_with_testing(*TRAIN, "--root-dir", str(root), "--num-env-steps", "8", "--force")

    assert status == 0, lines
    assert not (root / LOCK_FILE).exists()


def test_a_second_engine_on_a_claimed_root_dir_is_refused_and_changes_nothing(tmp_path):
    root = tmp_path / "run"
    _engine(root).train()
    before = snapshot(root)
    with claimed(str(root)):  # as a training in this process holds it
        with pytest.raises(RunDirBusy) as info:
            _engine(root).train()
        assert f"is being trained by process {os.getpid()} (since " in one_line(info.value)
    assert snapshot(root) == before


def test_evaluation_reads_a_run_dir_while_it_is_being_trained(tmp_path):
    root = tmp_path / "run"
    engine = _engine(root)
    engine.train()
    with claimed(str(root)):
        assert engine.evaluate(2)["eval/episodes"] == 2


FORKS_AND_DIES = textwrap.dedent('''
    import os, sys, time
    from rlengine.run.checkpoints.rundir import claimed

    with claimed(sys.argv[1]):
        child = os.fork()  # as multiprocessing forks environment workers
        if child == 0:
            print(f"child {os.getpid()}", flush=True)  # fork() has returned here: the at-fork hooks have run
            time.sleep(120)
            os._exit(0)
        time.sleep(120)
''')


def test_a_forked_worker_does_not_keep_the_lock_of_a_killed_training(tmp_path):
    root = tmp_path / "run"
    parent = subprocess.Popen([sys.executable, "-c", FORKS_AND_DIES, str(root)], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    line = parent.stdout.readline()
    child = int(line.split()[1])
    try:
        parent.kill()
        parent.wait(timeout=30)
        with claimed(str(root)):  # the worker lives on, but the lock went with the training
            pass
    finally:
        os.kill(child, signal.SIGKILL)


# -- nothing is written before the run is known to start ----------------------------------------------
def test_a_refused_force_keeps_the_run_dir_so_the_original_command_and_eval_still_work(tmp_path):
    root = tmp_path / "run"
    _engine(root, checkpoint_interval=2).train()
    before = snapshot(root)

    with pytest.raises(RLEngineError) as info:  # another algorithm: its checkpoint does not fit
        _engine(root, algorithm="toy-q", force=True).train()

    one_line(info.value)
    assert snapshot(root) == before  # config.toml too: the run is still the toy run
    assert _engine(root, checkpoint_interval=2).train().env_steps == 32  # the original command is not refused
    assert [row for row in MemoryWriter.last.rows if "eval/average_return" not in row] == []  # it resumed at the end
    rebuilt = Engine(str(root / "config.toml"), [f"train.root_dir={json.dumps(str(root))}"],
                     extra_plugins=[("testing", testing_plugin())])
    assert rebuilt.evaluate(2)["eval/episodes"] == 2


class KnownIds(CountingEnv):
    """An environment provider that knows one id, as Gymnasium knows its registry."""

    def __init__(self, env_id, num_envs, seed, first_env_id=0, config=None):
        if env_id != "Counting-v0":
            raise ConfigError(f"unknown environment id {env_id!r}. Did you mean 'Counting-v0'?")
        super().__init__(env_id, num_envs, seed, first_env_id, config)


class ProvidesIds:
    @hookimpl
    def rlengine_register_environments(self, register):
        register("ids", KnownIds)


def test_a_failed_start_leaves_no_root_dir_so_the_corrected_command_runs(tmp_path):
    root = tmp_path / "runs" / "typo"
    with pytest.raises(ConfigError, match="unknown environment id 'Countin-v0'"):
        _engine(root, ("ids", ProvidesIds()), env="Countin-v0", env_provider="ids").train()
    assert not (tmp_path / "runs").exists()  # nor its parent, which it created too

    assert _engine(root, ("ids", ProvidesIds()), env="Counting-v0", env_provider="ids").train().env_steps == 32


@pytest.mark.first_party
def test_an_unknown_gymnasium_id_leaves_no_root_dir(tmp_path):
    root = tmp_path / "run"
    with pytest.raises(ConfigError, match="unknown Gymnasium environment id 'CartPol-v1'"):
        _engine(root, env="CartPol-v1").train()
    assert not root.exists()
    assert _engine(root).train().env_steps == 32


def test_a_config_mismatch_leaves_the_run_dir_as_it_was(tmp_path):
    root = tmp_path / "run"
    _engine(root).train()
    before = snapshot(root)
    with pytest.raises(RLEngineError, match="holds a run with another config"):
        _engine(root, seed=3).train()
    assert snapshot(root) == before


class RefusesAtStart:
    """A plugin that writes a file into the run dir at train start, then refuses the run."""

    @hookimpl
    def rlengine_train_start(self, run):
        with open(os.path.join(run.root_dir, "plugin-notes.txt"), "w") as f:
            f.write("started?")
        raise ConfigError("[refuses] needs key x; set it with --set refuses.x=1")


def test_a_start_refused_by_a_plugin_leaves_the_run_dir_as_it_was(tmp_path):
    fresh, existing = tmp_path / "fresh", tmp_path / "existing"
    _engine(existing).train()
    before = snapshot(existing)
    for root in (fresh, existing):
        with pytest.raises(ConfigError, match="refuses"):
            _engine(root, ("refuses", RefusesAtStart()), force=True).train()
    assert not fresh.exists()
    assert snapshot(existing) == before  # the plugin's file of the refused run is gone again


@pytest.mark.first_party
def test_the_first_party_writers_write_nothing_for_a_refused_start(tmp_path):
    root = tmp_path / "run"
    _engine(root, writers=["jsonl", "tensorboard", "memory"], checkpoint_interval=2).train()
    before = snapshot(root)
    with pytest.raises(RLEngineError):
        _engine(root, algorithm="toy-q", writers=["jsonl", "tensorboard", "memory"], force=True).train()
    assert snapshot(root) == before  # no new TensorBoard event file, metrics.jsonl as it was


# -- only rlengine's own directories ---------------------------------------------------------------
def test_a_root_dir_holding_the_users_files_is_refused_naming_one(tmp_path, cli_with_testing):
    root = tmp_path / "mine"
    root.mkdir()
    (root / "metrics.jsonl").write_text('{"my": "row"}\n')
    (root / "notes.txt").write_text("keep me")
    before = snapshot(root)

    status, lines = cli_with_testing("train", "--algorithm", "toy", "--env", "counting", "--num-env-steps", "32",
                                     "--set", 'train.writers=["memory"]', "--root-dir", str(root))

    assert status == 2 and len(lines) == 1, lines
    assert lines[0] == (f"rlengine: error: --root-dir {root} holds files rlengine did not write (e.g. 'metrics.jsonl')"
                        " and is not an rlengine run directory: choose a new or empty --root-dir")
    assert snapshot(root) == before


def test_an_empty_existing_root_dir_is_trained_into(tmp_path):
    root = tmp_path / "empty"
    root.mkdir()
    assert _engine(root).train().env_steps == 32
    assert (root / MARKER_FILE).is_file() and (root / "config.toml").is_file()


def test_a_run_dir_of_an_older_version_resumes(tmp_path):
    root = tmp_path / "old"
    _engine(root, checkpoint_interval=2).train()
    os.remove(root / MARKER_FILE)  # older versions wrote config.toml and checkpoints/, no marker
    (root / "metrics.jsonl").write_text("")  # and their writers' files
    result = _engine(root, checkpoint_interval=2, num_env_steps=48, force=True).train()
    assert result.env_steps == 48 and result.iterations == 6  # resumed, not refused nor restarted
    assert (root / MARKER_FILE).is_file()


def test_a_root_dir_that_cannot_be_created_is_one_line(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(RLEngineError, match="cannot create --root-dir .*Not a directory.*: choose a --root-dir") as info:
        _engine(tmp_path / "file" / "run").train()
    one_line(info.value)


def test_a_root_dir_that_is_a_file_is_refused(tmp_path):
    path = tmp_path / "run"
    path.write_text("not a directory")
    with pytest.raises(NotARunDirectory, match="is a file, not a directory"):
        _engine(path).train()
    assert path.read_text() == "not a directory"

