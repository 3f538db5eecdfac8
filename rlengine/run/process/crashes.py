"""A native crash inside an environment's code named: which environment, and which plugin, before Python's dump.

A segfault in a Python environment that steps in the run's own process (a C
extension, ``ctypes``) ends the process at once: no Python code runs after it,
so no ``except`` can say which environment it was. Python's :mod:`faulthandler`
does run, and writes the stack of every thread to the file it was given. While
a run trains, that file is a pipe to a small relay process (started with the
run, idle until the pipe closes): when the pipe closes with a dump in it, the
relay writes one line naming the environment, if a frame of the crashing
thread is in the environment's own code (called by the engine's), then the dump, to the run's stderr. A
crash elsewhere (TensorFlow's kernels, another plugin) passes through as
Python wrote it. The relay ignores Ctrl-C (its own session), and ends with the
run: the run closes the pipe, or its death does.
"""

from __future__ import annotations

import contextlib
import faulthandler
import inspect
import os
import subprocess
import sys
from typing import Iterator, Optional

# Run as ``python -S -c RELAY HEADER CORE FILE...``: reads the dump, and names the environment when the
# crashing thread ("Current thread ...", up to the first blank line) has a frame in one of FILEs newer than
# its newest frame in rlengine's core (CORE): the environment's code, called by the engine's.
RELAY = r"""
import sys
dump = sys.stdin.buffer.read().decode(errors="replace")
if dump:
    header, core, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    current = dump.partition("Current thread")[2].partition("\n\n")[0]
    frames = [line.strip() for line in current.splitlines() if line.lstrip().startswith("File ")]
    called = []
    for frame in frames:
        if frame.startswith(f'File "{core}'):
            break
        called.append(frame)
    signal = dump.partition("Fatal Python error: ")[2].partition("\n")[0].strip() or "a fatal error"
    if any(frame.startswith(f'File "{name}"') for frame in called for name in files):
        sys.stderr.write(header.replace("{signal}", signal) + "\n")
    sys.stderr.write(dump)
    sys.stderr.flush()
"""


def environment_files(cls: type) -> list[str]:
    """The source files of ``cls`` and its bases outside rlengine's core: a frame in one of them is the
    environment's own code running (a wrapper's ``step`` is on the stack below the library it wraps)."""
    files = []
    for base in cls.__mro__:
        module = getattr(base, "__module__", "") or ""
        if module == "builtins" or module == "rlengine" or module.startswith("rlengine."):
            continue
        with contextlib.suppress(TypeError, OSError):
            path = inspect.getsourcefile(base)
            if path:
                files.append(os.path.abspath(path))
    return sorted(set(files))


@contextlib.contextmanager
def crashes_named(env_id: str, plugin: str, files: list[str]) -> Iterator[None]:
    """Within the block, a fatal signal in code of ``files`` prints one line naming ``env_id`` and
    ``plugin`` before Python's fault dump. Nothing is set up when there are no files (a graph environment),
    or when the relay cannot start (its failure costs only the line)."""
    relay = _start_relay(_header(env_id, plugin), files) if files else None
    if relay is None:
        yield
        return
    process, pipe = relay
    was_enabled = faulthandler.is_enabled()
    faulthandler.enable(file=pipe, all_threads=True)
    try:
        yield
    finally:
        faulthandler.disable()
        if was_enabled and sys.__stderr__ is not None:  # as it was: a user's -X faulthandler (or pytest's) dumps to stderr again
            faulthandler.enable(file=sys.__stderr__, all_threads=True)
        pipe.close()  # the relay reads an empty dump and ends (once forked children holding the pipe end too)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=1)  # else it is reaped later, by subprocess


def _header(env_id: str, plugin: str) -> str:
    return (f"rlengine: environment {env_id!r} (plugin {plugin!r}) crashed the process ({{signal}}) in its own "
            "code; Python's dump of the threads follows, newest call first: report it to the plugin's authors, "
            "or run the environment alone to reproduce it")


def _start_relay(header: str, files: list[str]) -> Optional[tuple]:
    read_end, write_end = os.pipe()
    core = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep
    try:
        process = subprocess.Popen([sys.executable, "-S", "-E", "-c", RELAY, header, core, *files], stdin=read_end,
                                   stdout=subprocess.DEVNULL, start_new_session=True)  # not in Ctrl-C's group
    except OSError:
        os.close(read_end)
        os.close(write_end)
        return None
    os.close(read_end)
    return process, os.fdopen(write_end, "w")
