"""rlengine.api.dying_with_parent: a child started with it ends when the process that started it is killed."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from rlengine.api import dying_with_parent

STARTS_A_CHILD = textwrap.dedent('''
    import signal, subprocess, sys, time
    from rlengine.api import dying_with_parent
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True,
                             preexec_fn=dying_with_parent(signal.SIGTERM) if sys.argv[1] == "yes" else None)
    print(child.pid, flush=True)
    time.sleep(120)
''')


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"  # a zombie has ended, only not been reaped
    except FileNotFoundError:
        return False


def _child_after_parent_killed(request: str, wait: float) -> bool:
    parent = subprocess.Popen([sys.executable, "-c", STARTS_A_CHILD, request], stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    parent.kill()
    parent.wait(timeout=30)
    try:
        deadline = time.monotonic() + wait
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        return _alive(child)
    finally:
        if _alive(child):
            os.kill(child, signal.SIGKILL)


@pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux's")
def test_the_child_ends_with_its_killed_parent_and_lives_on_without_the_request():
    assert not _child_after_parent_killed("yes", wait=10)
    assert _child_after_parent_killed("no", wait=1)  # what the request prevents: a child left running


def test_there_is_no_request_where_the_platform_has_none(monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    assert dying_with_parent(signal.SIGINT) is None
