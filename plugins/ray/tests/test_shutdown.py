"""However a run ends (its budget, SIGTERM, Ctrl-C), no Ray process it started is left behind.

Each run is a subprocess with a marker in its environment, which every process Ray starts for it
inherits (the GCS, the raylet, the workers): afterwards no process may carry the marker.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.ray  # starts Ray processes: tox -e ray runs these

SCRIPT = textwrap.dedent("""
    import sys
    from rlengine import Engine, hookimpl
    from rlengine.errors import TrainingInterrupted
    from rlengine_ray.testing import ray_config, testing_plugins

    class Announce:
        @hookimpl
        def rlengine_iteration_end(self, run, iteration, metrics):
            print(f"iteration {iteration}", flush=True)

    config = ray_config(sys.argv[1], num_env_steps=int(sys.argv[2]))
    try:
        Engine(config, extra_plugins=[*testing_plugins(), ("announce", Announce())]).train()
    except TrainingInterrupted as exc:
        print("interrupted", exc.checkpoint, flush=True)
        sys.exit(3)
    print("finished", flush=True)
""")


def _marked_processes(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker.encode() in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:  # ended meanwhile, or not ours to read
            pass
    return found


def _start(tmp_path: Path, env_steps: int) -> tuple[subprocess.Popen, str]:
    marker = f"RLENGINE_RAY_TEST_{uuid.uuid4().hex}"
    env = {**os.environ, marker: "1"}
    env.pop("RAY_ADDRESS", None)
    script = tmp_path / "run.py"
    script.write_text(SCRIPT)
    process = subprocess.Popen([sys.executable, str(script), str(tmp_path / "run"), str(env_steps)], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    return process, marker


def _wait_for_line(process: subprocess.Popen, wanted: str, seconds: float = 240.0) -> list[str]:
    lines, deadline = [], time.monotonic() + seconds
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        lines.append(line.rstrip())
        if line.startswith(wanted):
            return lines
    raise AssertionError(f"no {wanted!r} line; the run printed:\n" + "\n".join(lines[-40:]))


def _assert_nothing_left(process: subprocess.Popen, marker: str) -> None:
    process.wait(timeout=120)
    deadline = time.monotonic() + 20  # the raylet reaps its workers a moment after the driver leaves
    while _marked_processes(marker) and time.monotonic() < deadline:
        time.sleep(0.5)
    left = _marked_processes(marker)
    for pid in left:  # clean up before failing, so no later test inherits them
        os.kill(pid, signal.SIGKILL)
    assert not left, f"{len(left)} Ray processes were left behind"


def test_finished_run_leaves_no_ray_process(tmp_path):
    process, marker = _start(tmp_path, env_steps=96)
    _wait_for_line(process, "finished")
    _assert_nothing_left(process, marker)
    assert process.returncode == 0


@pytest.mark.parametrize("how", ["sigterm", "ctrl-c"])
def test_stopped_run_checkpoints_and_leaves_no_ray_process(tmp_path, how):
    process, marker = _start(tmp_path, env_steps=10**7)
    _wait_for_line(process, "iteration 3")
    if how == "sigterm":
        process.send_signal(signal.SIGTERM)
    else:  # a terminal's Ctrl-C reaches the whole foreground process group, Ray's processes included
        os.killpg(process.pid, signal.SIGINT)
    lines = _wait_for_line(process, "interrupted", seconds=120)
    _assert_nothing_left(process, marker)
    assert process.returncode == 3, lines[-20:]
    assert "None" not in lines[-1]  # a checkpoint was written
