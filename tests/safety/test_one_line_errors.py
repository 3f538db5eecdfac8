"""One line for every error, and environment faults classified ("Never lose a run, part two", items 8 and 9).

Every case runs the command line (``cli.main`` in process, or ``rlengine`` in
a subprocess for crashes and signals) and asserts one ``rlengine: error:``
line naming the culprit and the exit status; ``--debug`` shows the traceback.
Deterministic environment faults (the first reset raising, arrays of the
wrong shape or dtype) stop the run at once instead of being restarted; a
worker process that dies is named with its signal in one warning line.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import tensorflow as tf

from rlengine import Command, hookimpl
from rlengine.cli import main
from rlengine.plugin import manager
from rlengine.testing import CountingEnv, ToyAlgorithm, testing_plugin
from rlengine.testing.failing import FaultyEnv, reset_fault_plan

ERROR = "rlengine: error: "


# -- helpers ----------------------------------------------------------------------------------------
@pytest.fixture
def cli(monkeypatch, capsys):
    """``run(*argv, plugins=[(name, obj)]) -> (status, stderr)``: ``cli.main`` with the testing plugin
    (and ``plugins``) added to the plugins it builds."""
    for name in ("RLENGINE_DEBUG", manager.DISABLE_ENV, manager.TRACE_ENV):
        monkeypatch.delenv(name, raising=False)
    extra: list = []
    real = manager.build_plugins

    def build(disabled=(), extra_plugins=(), load_entry_points=True):
        return real(disabled, [("testing", testing_plugin()), *extra, *extra_plugins], load_entry_points)

    monkeypatch.setattr(manager, "build_plugins", build)

    def run(*argv, plugins=()):
        extra[:] = plugins
        status = main([str(a) for a in argv])
        return status, capsys.readouterr().err

    return run


def tiny_train(root, *more, env="counting", algorithm="toy"):
    """``train`` arguments of a run that takes about a second with the testing plugin."""
    return ["train", "--algorithm", algorithm, "--env", env, "--num-envs", "2", "--num-env-steps", "32",
            "--root-dir", root, "--set", 'train.writers=["memory"]', "--set", "train.unroll_length=4",
            "--set", "train.eval_interval=0", *more]


def the_error_line(err: str, *parts: str) -> str:
    """The only stderr line, an ``rlengine: error:`` one holding every part (no traceback, no restart
    warning)."""
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(ERROR), err
    for part in parts:
        assert part in lines[0], f"{part!r} not in {lines[0]!r}"
    return lines[0]


class Registers:
    """A plugin registering ``environments`` and ``algorithms`` given as ``{name: class}``."""

    def __init__(self, environments=None, algorithms=None):
        self.environments, self.algorithms = environments or {}, algorithms or {}

    @hookimpl
    def rlengine_register_environments(self, register):
        for name, cls in self.environments.items():
            register(name, cls)

    @hookimpl
    def rlengine_register_algorithms(self, register):
        for name, cls in self.algorithms.items():
            register(name, cls)


# -- item 8: operating-system errors ----------------------------------------------------------------
def test_root_dir_that_is_a_file(cli, tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("mine")
    status, err = cli(*tiny_train(path))
    assert status == 2
    the_error_line(err, "notes.txt")
    assert path.read_text() == "mine"  # not ours: left alone


def test_read_only_root_dir(cli, tmp_path, monkeypatch):
    parent = tmp_path / "read-only"
    parent.mkdir()
    parent.chmod(0o555)
    real_mkdir = os.mkdir

    def mkdir(path, *args, **kwargs):  # root ignores permissions: refuse as a read-only directory would
        if str(path).startswith(str(parent)):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", mkdir)
    status, err = cli(*tiny_train(parent / "run"))
    assert status == 2
    the_error_line(err, "Permission denied", "read-only")


def test_disk_full_while_writing_the_run_dir(cli, tmp_path, monkeypatch):
    def fsync(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", fsync)
    status, err = cli(*tiny_train(tmp_path / "run"))
    assert status == 2
    the_error_line(err, "No space left on device", "free some disk space", "--debug")


def test_config_path_that_is_a_directory(cli, tmp_path):
    status, err = cli("train", tmp_path)
    assert status == 2
    the_error_line(err, f"config file {str(tmp_path)!r} is a directory")


def test_config_file_that_is_not_utf8(cli, tmp_path):
    path = tmp_path / "latin1.toml"
    path.write_bytes('[train]\nenv = "caf\xe9"\n'.encode("latin-1"))
    status, err = cli("train", path)
    assert status == 2
    the_error_line(err, "latin1.toml", "is not UTF-8", "offset 18")


# -- item 8: values, plugins, environments -----------------------------------------------------------
def test_seed_over_2_to_the_32(cli, tmp_path):
    status, err = cli(*tiny_train(tmp_path / "run", "--seed", 2**32))
    assert status == 2
    the_error_line(err, "'seed' must be <= 4294967295")
    assert not (tmp_path / "run").exists()


class AssertingToy(ToyAlgorithm):
    """Its graph asserts an observation bound the counting env passes mid-run: a TensorFlow error."""

    def rollout(self, time_step, state):
        check = tf.debugging.assert_less(tf.reduce_max(time_step.observation[:, 0]), 3.0,
                                         message="toy observation out of range")
        with tf.control_dependencies([check]):
            return super().rollout(time_step, state)


def test_tensorflow_error_mid_run(cli, tmp_path):
    status, err = cli(*tiny_train(tmp_path / "run", algorithm="asserting"),
                      plugins=[("asserting", Registers(algorithms={"asserting": AssertingToy}))])
    assert status == 2
    # the graph's traceback shows only the graph being run: the line names the code that defined the op
    the_error_line(err, "toy observation out of range", "(InvalidArgumentError in ", "test_one_line_errors.py:",
                   "(rollout), where the failing op was defined", "--debug shows the traceback")


class RaisingToy(ToyAlgorithm):
    def __init__(self, *args):
        raise ValueError("hidden sizes must be positive")


def test_plugin_exception_names_the_code_that_raised(cli, tmp_path):
    status, err = cli(*tiny_train(tmp_path / "run", algorithm="raising"),
                      plugins=[("raising", Registers(algorithms={"raising": RaisingToy}))])
    assert status == 2
    line = the_error_line(err, "hidden sizes must be positive", "(ValueError in ", "(__init__)")
    assert __name__.rpartition(".")[2] in line  # this module, where the plugin's code is


def test_debug_shows_the_traceback_of_an_unexpected_error(cli, tmp_path):
    status, err = cli("--debug", *tiny_train(tmp_path / "run", algorithm="raising"),
                      plugins=[("raising", Registers(algorithms={"raising": RaisingToy}))])
    assert status == 2
    assert "Traceback (most recent call last)" in err
    assert err.rstrip().splitlines()[-1].startswith(f"{ERROR}hidden sizes must be positive (ValueError in ")


class BrokenEnv(CountingEnv):
    def __init__(self, *args, **kwargs):
        raise OSError("cannot open the simulator's shared library")


def test_environment_that_cannot_be_made(cli, tmp_path):
    status, err = cli(*tiny_train(tmp_path / "run", env="broken"),
                      plugins=[("broken", Registers(environments={"broken": BrokenEnv}))])
    assert status == 2
    the_error_line(err, "environment 'broken' could not be made: OSError: cannot open the simulator's shared library")


@pytest.mark.first_party
def test_environment_module_that_is_not_installed(cli, tmp_path):
    import gymnasium

    env_id = "rlengine-test/NeedsMissingModule-v0"
    if env_id not in gymnasium.registry:
        gymnasium.register(env_id, entry_point="rlengine_test_module_not_installed:Env")
    status, err = cli(*tiny_train(tmp_path / "run", env=env_id))
    assert status == 2
    the_error_line(err, f"environment {env_id!r} needs the Python module 'rlengine_test_module_not_installed', "
                        "which is not installed")


class JunkConfigure:
    @hookimpl
    def rlengine_configure(self, config):
        return {"train": {"seed": 1}}  # a dict, not the RunConfig it was given


def test_configure_hook_returning_junk(cli, tmp_path):
    status, err = cli(*tiny_train(tmp_path / "run"), plugins=[("junk", JunkConfigure())])
    assert status == 2
    the_error_line(err, "plugin 'junk'", "rlengine_configure returned dict", "not a RunConfig", "--disable-plugin junk")


class ShapeShifter(CountingEnv):
    """Steps well until step 3, then returns ``how`` is wrong with the observation."""

    how = "shape"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.steps = 0

    def step(self, action):
        time_step = super().step(action)
        self.steps += 1
        if self.steps < 3:
            return time_step
        if self.how == "shape":
            return time_step._replace(observation=np.zeros([self.num_envs, 3], np.float32))
        return time_step._replace(observation=time_step.observation.astype(np.float64))


@pytest.mark.parametrize("how, problem", [
    ("shape", "observation has shape (2, 3), expected (2, 2)"),
    ("dtype", "observation has dtype float64, expected float32"),
])
def test_step_observation_of_the_wrong_shape_or_dtype_mid_run(cli, tmp_path, monkeypatch, how, problem):
    monkeypatch.setattr(ShapeShifter, "how", how)
    status, err = cli(*tiny_train(tmp_path / "run", env="shifter"),
                      plugins=[("shifter", Registers(environments={"shifter": ShapeShifter}))])
    assert status == 2
    # one line, so no restart warning either: the same code would return the same arrays again
    the_error_line(err, "environment 'shifter': step() time step does not match its time_step_spec()",
                   problem, "not restarted")


class EndRaiser:
    @hookimpl
    def rlengine_train_end(self, run, error):
        raise RuntimeError("could not flush the dashboard")


def test_train_end_hook_raising_after_an_environment_failure_reports_both(cli, tmp_path):
    reset_fault_plan("two-errors")
    status, err = cli(*tiny_train(tmp_path / "run", "--set", "faulty.plan=two-errors", "--set", "faulty.fail_steps=[3]",
                                  "--set", "train.max_env_restarts=0", env="faulty"),
                      plugins=[("end-raiser", EndRaiser())])
    assert status == 2
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 2 and "Traceback" not in err, err
    assert lines[0].startswith(f"{ERROR}environment 'faulty' (copies 0..1) failed after 0 restart(s)")
    assert "injected step fault at step 3" in lines[0]
    assert "the run was checkpointed to " in lines[0]  # the trainer's note: where the run can resume from
    assert lines[1].startswith(f"{ERROR}then, while handling that: plugin 'end-raiser' (in-process) raised in hook "
                               "rlengine_train_end: RuntimeError: could not flush the dashboard")


class DividingCommand(Command):
    help = "divides by zero"

    def run(self, args):
        return 1 // 0


class RegistersCommand:
    @hookimpl
    def rlengine_register_commands(self, register):
        register("divide", DividingCommand)


def test_last_resort_any_other_exception_is_one_line(cli):
    status, err = cli("divide", plugins=[("divider", RegistersCommand())])
    assert status == 2
    the_error_line(err, "integer division or modulo by zero (ZeroDivisionError in ", "(run)",
                   "--debug shows the traceback")


# -- item 9: faults classified -------------------------------------------------------------------------
def test_first_reset_raising_is_not_retried(cli, tmp_path):
    reset_fault_plan("first-reset")
    status, err = cli(*tiny_train(tmp_path / "run", "--set", "faulty.plan=first-reset",
                                  "--set", "faulty.fail_resets=[1]", env="faulty"))
    assert status == 2
    the_error_line(err, "environment 'faulty' (copies 0..1): its first reset() raised RuntimeError: "
                        "injected reset fault at reset 1", "not restarted")
    assert FaultyEnv.counters["first-reset"]["resets"] == 1  # no restart tried it again


# -- subprocesses: crashes, signals ----------------------------------------------------------------------
CRASHY_MODULE = '''
"""A Gymnasium env that crashes once at step ``at`` of an episode: a segfault, or an exception."""
import ctypes, os
import gymnasium, numpy as np

class CrashyEnv(gymnasium.Env):
    observation_space = gymnasium.spaces.Box(-10.0, 10.0, (2,), np.float32)
    action_space = gymnasium.spaces.Discrete(2)

    def __init__(self, mode="segfault", claims=".", at=3):
        self.mode, self.claims, self.at, self.t = mode, claims, at, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        if self.t == self.at and self._claim():
            if self.mode == "segfault":
                ctypes.string_at(0)  # reads address 0: SIGSEGV
            raise RuntimeError("injected crash")
        return np.full(2, self.t, np.float32), 1.0, False, self.t >= 6, {}

    def _claim(self):  # once per run, across worker processes
        try:
            os.close(os.open(os.path.join(self.claims, "crashed"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            return True
        except FileExistsError:
            return False

gymnasium.register("Crashy-v0", entry_point=__name__ + ":CrashyEnv")
'''

RUNNER = '''
import sys
from rlengine import cli
from rlengine.plugin import manager

real = manager.build_plugins


def build(disabled=(), extra_plugins=(), load_entry_points=True):
    from rlengine.testing import testing_plugin  # loaded like any plugin: inside the command

    return real(disabled, [("testing", testing_plugin()), *extra_plugins], load_entry_points)


manager.build_plugins = build
sys.exit(cli.main(sys.argv[1:]))
'''


def run_cli_process(tmp_path, *argv, timeout=240, interrupt_after=None):
    """``rlengine *argv`` in a subprocess with the testing plugin and the crashy env module importable."""
    (tmp_path / "crashy_env_module.py").write_text(textwrap.dedent(CRASHY_MODULE))
    (tmp_path / "runner.py").write_text(textwrap.dedent(RUNNER))
    env = {k: v for k, v in os.environ.items()
           if k not in ("RLENGINE_DEBUG", manager.DISABLE_ENV, manager.TRACE_ENV, "PYTHONFAULTHANDLER")}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), *filter(None, [os.environ.get("PYTHONPATH")])])
    process = subprocess.Popen([sys.executable, str(tmp_path / "runner.py"), *map(str, argv)], cwd=tmp_path, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if interrupt_after is not None:
        interrupt_after(process)
    out, err = process.communicate(timeout=timeout)
    return process.returncode, out, err


def crashy_train(tmp_path, mode, vectorization):
    return [*tiny_train(tmp_path / "run", "--set", f'gym.vectorization="{vectorization}"',
                        "--set", f'gym.make_kwargs={{mode = "{mode}", claims = "{tmp_path}"}}',
                        "--set", "train.num_env_steps=64", env="crashy_env_module:Crashy-v0")]


@pytest.mark.slow  # the CLI end to end (a fresh process, ~10 s); the mechanism has a fast in-process test
@pytest.mark.first_party
def test_worker_killed_by_a_signal_is_named_with_it_in_one_warning_line(tmp_path):
    status, _, err = run_cli_process(tmp_path, *crashy_train(tmp_path, "segfault", "async"))
    assert status == 0, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err  # no multiprocessing tracebacks around it
    assert lines[0].startswith("rlengine: warning: environment 'crashy_env_module:Crashy-v0' (copies 0..1): step() "
                               "raised EnvWorkerDied: env worker ")
    assert "of 'crashy_env_module:Crashy-v0'" in lines[0] and "was killed by SIGSEGV; recreated it" in lines[0]


@pytest.mark.thorough  # the root suite leaves it out for time; this package's tox env runs it
@pytest.mark.first_party
def test_worker_exception_is_one_warning_line(tmp_path):
    status, _, err = run_cli_process(tmp_path, *crashy_train(tmp_path, "raise", "async"))
    assert status == 0, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err  # Gymnasium's log of the worker's traceback is held back
    assert "step() raised RuntimeError: injected crash; recreated it (restart 1 of 10" in lines[0]


@pytest.mark.first_party
def test_in_process_segfault_prints_the_python_stack(tmp_path):
    status, _, err = run_cli_process(tmp_path, *crashy_train(tmp_path, "segfault", "sync"))
    assert status == -signal.SIGSEGV  # nothing can go on in a process whose memory is corrupt ...
    assert "Fatal Python error: Segmentation fault" in err  # ... but faulthandler names the code that crashed
    assert "crashy_env_module.py" in err and "in step" in err
    named = [line for line in err.splitlines() if line.startswith("rlengine: environment ")]  # before the dump
    assert named == [line for line in named if "'crashy_env_module:Crashy-v0' (plugin 'gym') crashed the process "
                     "(Segmentation fault) in its own code" in line] and len(named) == 1, err


def _interrupt_during_start_up(process):
    time.sleep(1.0)  # importing TensorFlow, building the plugins
    process.send_signal(signal.SIGINT)


def test_ctrl_c_during_start_up_is_at_most_one_line(tmp_path):
    status, _, err = run_cli_process(tmp_path, *tiny_train(tmp_path / "run"), interrupt_after=_interrupt_during_start_up)
    assert status == 130, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) <= 1 and "Traceback" not in err, err


INTERRUPTED_IMPORT = """
import runpy, sys

class CtrlC:  # Ctrl-C while the command's own module imports what it needs, before main() runs
    def find_spec(self, name, path=None, target=None):
        if name == "argparse":  # the package rlengine (the facade) has imported rlengine.errors already
            raise KeyboardInterrupt

sys.meta_path.insert(0, CtrlC())
sys.argv = ["rlengine", "train"]
runpy.run_module("rlengine.cli", run_name="__main__", alter_sys=True)
"""


def test_ctrl_c_while_the_command_imports_is_one_line(tmp_path):
    done = subprocess.run([sys.executable, "-c", INTERRUPTED_IMPORT], capture_output=True, text=True, cwd=tmp_path,
                          timeout=120)
    assert done.returncode in (130, -signal.SIGINT)  # Python exits by SIGINT: 130 in a shell
    assert done.stderr == "rlengine: interrupted\n"
