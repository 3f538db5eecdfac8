"""SIGINT / SIGTERM during training: finish the iteration, checkpoint, exit 130 / 143; a second
SIGINT aborts at once; an inherited SIG_IGN is kept; the train-end hook always runs; the previous
handlers come back. (Stops during a long evaluation or a hung environment: tests/safety/test_stops.py.)"""

import os
import signal
import subprocess
import sys
import threading
import time

import pytest
import tensorflow as tf

from rlengine import hookimpl
from rlengine.errors import TrainingInterrupted
from rlengine.run.engine import Engine
from rlengine.run.process.signals import STOP_SIGNALS
from rlengine.testing import HookRecorder, testing_plugin, tiny_config
from tests.plugin_packages import cli_with_testing_kit

# The CLI with the testing kit loaded: the counting env and the toy algorithm live in-process.
ENTRY_SCRIPT = cli_with_testing_kit('''
    class Announce:
        @hookimpl
        def rlengine_iteration_end(self, iteration):
            if iteration == 1:
                print("test: iterating", flush=True)
            if os.environ.get("SLOW_STOP"):
                while signals.stop_requested() is None:  # the first signal lands inside an iteration, never
                    time.sleep(0.01)                     # between one's hooks and the loop's stop check
                time.sleep(60)  # finishing this iteration would take a minute

        @hookimpl
        def rlengine_train_end(self, error):
            print(f"test: train_end {type(error).__name__}", flush=True)
''', 'import os, time\nfrom rlengine.run.process import signals')

TINY_TRAIN = ["train", "--algorithm", "toy", "--env", "counting", "--num-env-steps", "1000000000",
              "--set", 'train.writers=["memory"]', "--set", "train.eval_interval=0"]


class Process:
    """A subprocess whose merged stdout / stderr lines are collected as they come."""

    def __init__(self, argv, cwd, preexec_fn=None, **env):
        environ = {**os.environ, "PYTHONUNBUFFERED": "1", "TF_CPP_MIN_LOG_LEVEL": "3", **env}
        self.popen = subprocess.Popen(argv, cwd=cwd, env=environ, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True, preexec_fn=preexec_fn)
        self.lines = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.popen.stdout:
            self.lines.append(line.rstrip("\n"))

    def output(self) -> str:
        return "\n".join(self.lines)

    def wait_for(self, condition, timeout=180.0):
        deadline = time.monotonic() + timeout
        while not condition():
            if self.popen.poll() is not None:
                pytest.fail(f"exited with {self.popen.returncode} before it was ready:\n{self.output()}")
            if time.monotonic() > deadline:
                self.popen.kill()
                pytest.fail(f"not ready after {timeout} s:\n{self.output()}")
            time.sleep(0.05)

    def wait_for_line(self, text, timeout=180.0):
        self.wait_for(lambda: any(text in line for line in self.lines), timeout)

    def exit_within(self, seconds) -> tuple:
        """(exit status, seconds it took); fails if the process is still running after ``seconds``."""
        start = time.monotonic()
        try:
            status = self.popen.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            pytest.fail(f"still running {seconds} s after the signal:\n{self.output()}")
        self.reader.join(timeout=5)
        return status, time.monotonic() - start


def start_tiny(tmp_path, preexec_fn=None, **env) -> Process:
    script = tmp_path / "rlengine_with_testing.py"
    script.write_text(ENTRY_SCRIPT)
    process = Process([sys.executable, str(script), *TINY_TRAIN, "--root-dir", str(tmp_path / "run")],
                      cwd=tmp_path, preexec_fn=preexec_fn, **env)
    process.wait_for_line("test: iterating")
    return process


def newest_checkpoint_iteration(root_dir) -> int:
    latest = tf.train.latest_checkpoint(os.path.join(root_dir, "checkpoints"))
    assert latest is not None, os.listdir(root_dir)
    return int(tf.train.load_checkpoint(latest).get_tensor("iteration/.ATTRIBUTES/VARIABLE_VALUE"))


@pytest.mark.parametrize("signal_number, status", [
    (signal.SIGTERM, 143),
    pytest.param(signal.SIGINT, 130, marks=pytest.mark.slow),  # the same path; in-process below covers SIGINT
])
def test_a_stop_signal_checkpoints_and_exits_with_128_plus_the_signal(tmp_path, signal_number, status):
    process = start_tiny(tmp_path)
    process.popen.send_signal(signal_number)
    code, seconds = process.exit_within(10)
    out = process.output()
    assert code == status, out
    assert "test: train_end TrainingInterrupted" in out
    last = [line for line in process.lines if line.startswith("rlengine: training stopped")]
    assert len(last) == 1, out
    name = signal.Signals(signal_number).name
    assert f"stopped by {name}; checkpoint saved to {tmp_path / 'run' / 'checkpoints'}" in last[0]
    assert "resume with: rlengine train" in last[0] and f"--root-dir {tmp_path / 'run'}" in last[0]
    assert newest_checkpoint_iteration(tmp_path / "run") >= 1


@pytest.mark.thorough  # the root suite leaves it out for time; this package's tox env runs it
def test_a_second_sigint_aborts_without_waiting_for_the_iteration(tmp_path):
    process = start_tiny(tmp_path, SLOW_STOP="1")  # after the first signal an iteration takes a minute
    process.popen.send_signal(signal.SIGINT)
    process.wait_for_line("SIGINT received", timeout=10)
    process.popen.send_signal(signal.SIGINT)
    code, seconds = process.exit_within(10)
    out = process.output()
    assert code == 130, out
    assert "rlengine: interrupted" in out and "checkpoint saved" not in out
    assert "test: train_end KeyboardInterrupt" in out


@pytest.mark.slow  # the CLI end to end (a fresh process, ~10 s); the mechanism has a fast in-process test
def test_an_inherited_sig_ign_keeps_sigint_ignored_while_sigterm_still_stops(tmp_path):
    # a background job of a script starts with SIGINT ignored; the run must not stop on one
    process = start_tiny(tmp_path, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    process.popen.send_signal(signal.SIGINT)
    time.sleep(2)
    assert process.popen.poll() is None, process.output()
    assert "SIGINT received" not in process.output()
    process.popen.send_signal(signal.SIGTERM)
    code, _ = process.exit_within(10)
    assert code == 143, process.output()


@pytest.mark.slow  # about 35 s, mostly starting TensorFlow and tracing PPO
@pytest.mark.first_party
def test_sigterm_stops_ppo_on_cartpole_from_the_cli(tmp_path):
    root = tmp_path / "run"
    process = Process([sys.executable, "-m", "rlengine.cli", "train", "--num-env-steps", "100000000",
                       "--root-dir", str(root), "--set", 'train.writers=["jsonl"]',
                       "--set", "train.eval_interval=0"], cwd=tmp_path)
    metrics = root / "metrics.jsonl"
    process.wait_for(lambda: metrics.exists() and metrics.read_text().count("\n") >= 1)
    process.popen.send_signal(signal.SIGTERM)
    code, seconds = process.exit_within(10)
    assert code == 143, process.output()
    assert newest_checkpoint_iteration(root) >= 1


# -- in-process ----------------------------------------------------------------------------------


class SignalsItself:
    """Sends this process ``signal_number`` at the end of iteration ``at``."""

    def __init__(self, signal_number, at):
        self.signal_number, self.at = signal_number, at

    @hookimpl
    def rlengine_iteration_end(self, iteration):
        if iteration == self.at:
            os.kill(os.getpid(), self.signal_number)


def handlers():
    return {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}


def test_in_process_interrupt_saves_runs_train_end_and_restores_the_handlers(tmp_path):
    before = handlers()
    recorder = HookRecorder()
    engine = Engine(tiny_config(str(tmp_path / "run"), num_env_steps=10_000, eval_interval=0),
                    extra_plugins=[("testing", testing_plugin()), ("recorder", recorder),
                                   ("kill", SignalsItself(signal.SIGINT, at=2))])
    with pytest.raises(TrainingInterrupted) as info:
        engine.train()
    assert info.value.signal_number == signal.SIGINT
    assert handlers() == before
    assert recorder.calls[-2:] == ["checkpoint_saved:2", "train_end:TrainingInterrupted"]
    assert newest_checkpoint_iteration(tmp_path / "run") == 2
    with pytest.raises(KeyboardInterrupt):  # Ctrl-C means KeyboardInterrupt again
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)


def test_handlers_are_restored_after_a_normal_run(tmp_path):
    before = handlers()
    Engine(tiny_config(str(tmp_path / "run")), extra_plugins=[("testing", testing_plugin())]).train()
    assert handlers() == before


def test_training_in_another_thread_installs_no_handlers(tmp_path):
    before, results = handlers(), []
    engine = Engine(tiny_config(str(tmp_path / "run")), extra_plugins=[("testing", testing_plugin())])
    worker = threading.Thread(target=lambda: results.append(engine.train()))
    worker.start()
    worker.join(timeout=120)
    assert len(results) == 1 and results[0].env_steps == 32
    assert handlers() == before
