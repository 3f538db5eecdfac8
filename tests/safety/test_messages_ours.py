"""Every message a user sees is ours (issue 50, item 5): a native crash inside an environment names the
environment and its plugin before Python's dump; TensorFlow's C++ log lines stay out of the Python API's
output as they do out of the command line's."""

import os
import re
import subprocess
import sys
import textwrap

import pytest

import rlengine
from rlengine.quiet_tensorflow import import_tensorflow
from rlengine.run.process import crashes
from rlengine.testing import testing_plugin, tiny_config

#: A line of TensorFlow's C++ runtime (absl), or the notice absl prints before its logging starts
TENSORFLOW_LINE = re.compile(r"^([IWEF]\d{4} \d\d:\d\d:\d\d|WARNING: All log messages before absl)")
REPO_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# A user's program: loads a trained run's policy and acts with it, then trains a run whose environment crashes
CRASHING_PROGRAM = textwrap.dedent('''
    import ctypes
    import os
    import sys

    import numpy

    import rlengine
    from rlengine import hookimpl
    from rlengine.testing import CountingEnv, testing_plugin, tiny_config


    class CrashingEnv(CountingEnv):
        """Reads address 0 (a real SIGSEGV) at its third step."""

        def step(self, action):
            if self.t[0] == 2:
                ctypes.string_at(0)
            return super().step(action)


    class CrashPlugin:
        @hookimpl
        def rlengine_register_environments(self, register):
            register("crashing", CrashingEnv)


    policy = rlengine.load(sys.argv[1], backend="tensorflow", extra_plugins=[("testing", testing_plugin())])
    policy.predict(numpy.zeros(2, numpy.float32), deterministic=False)
    print(os.environ["TF_CPP_MIN_LOG_LEVEL"], flush=True)
    plugins = [("testing", testing_plugin()), ("crash-kit", CrashPlugin())]
    rlengine.Engine(tiny_config(sys.argv[2], env="crashing"), extra_plugins=plugins).train()
''')


@pytest.mark.thorough  # the root suite leaves it out for time; this package's tox env runs it
def test_the_python_api_prints_only_our_lines_and_a_segfault_in_an_environment_names_it(tmp_path):
    """In a fresh process: ``rlengine.load``, ``predict`` and ``Engine.train`` print nothing of TensorFlow's C++
    runtime (absl's ``I0000``/``E0000`` lines: the CUDA probe on a machine without a GPU, oneDNN's notices),
    and an environment that segfaults is named, with its plugin, before Python's dump."""
    trained = tmp_path / "trained"
    rlengine.Engine(tiny_config(str(trained)), extra_plugins=[("testing", testing_plugin())]).train()
    script = tmp_path / "program.py"
    script.write_text(CRASHING_PROGRAM)
    environ = {k: v for k, v in os.environ.items()
               if k not in ("TF_CPP_MIN_LOG_LEVEL", "RLENGINE_DEBUG", "PYTHONFAULTHANDLER")}
    environ["PYTHONPATH"] = os.pathsep.join(filter(None, [REPO_DIR, os.environ.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, str(script), str(trained), str(tmp_path / "run")], cwd=tmp_path,
                          env=environ, capture_output=True, text=True, timeout=300)

    assert done.returncode == -11, (done.returncode, done.stderr[-3000:])
    assert done.stdout.strip() == "2"  # set for the user who set nothing
    lines = done.stderr.splitlines()
    assert not [line for line in lines if TENSORFLOW_LINE.match(line)], done.stderr[-3000:]
    named = [i for i, line in enumerate(lines) if line.startswith("rlengine: environment 'crashing'")]
    assert len(named) == 1, done.stderr[-3000:]
    assert lines[named[0]].startswith("rlengine: environment 'crashing' (plugin 'crash-kit') crashed the process "
                                      "(Segmentation fault) in its own code; ")
    assert lines[named[0] + 1] == "Fatal Python error: Segmentation fault"  # Python's dump follows the line
    assert any("program.py" in line and "in step" in line for line in lines[named[0]:])


def _relayed(dump: str, files: list) -> str:
    """What the relay writes for ``dump`` when the environment's code is in ``files``."""
    core = os.path.join(REPO_DIR, "rlengine") + os.sep
    done = subprocess.run([sys.executable, "-S", "-E", "-c", crashes.RELAY, "named {signal}", core, *files],
                          input=dump, capture_output=True, text=True, timeout=60)
    return done.stderr


def _dump(*frames: str) -> str:
    """A fault dump as Python's faulthandler writes it, the crashing thread's ``frames`` newest first."""
    lines = "".join(f'  File "{path}", line 1 in {name}\n' for path, name in frames)
    return ("Fatal Python error: Segmentation fault\n\nThread 0x1 (most recent call first):\n"
            f'  File "/env/plugin.py", line 1 in step\n\nCurrent thread 0x2 (most recent call first):\n{lines}\n'
            "Extension modules: numpy (total: 1)\n")


def test_the_relay_blames_the_environment_only_for_its_own_code_called_by_the_engine():
    engine = os.path.join(REPO_DIR, "rlengine", "collect", "stepper.py")
    in_step = _dump(("/lib/ctypes.py", "string_at"), ("/env/plugin.py", "step"), (engine, "step"),
                    ("/env/plugin.py", "<module>"))
    elsewhere = _dump(("/lib/ctypes.py", "string_at"), ("/hooks/mine.py", "iteration_end"), (engine, "train"),
                      ("/env/plugin.py", "<module>"))  # a script that defines the environment and trains

    assert _relayed(in_step, ["/env/plugin.py"]) == "named Segmentation fault\n" + in_step
    assert _relayed(elsewhere, ["/env/plugin.py"]) == elsewhere  # another thread in its code does not count
    assert _relayed("", ["/env/plugin.py"]) == ""  # the run ended without a crash


def test_a_log_level_the_user_set_is_kept(monkeypatch):
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "0")
    import_tensorflow()

    assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "0"
