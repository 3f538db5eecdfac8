"""How long each installed plugin adds to every ``rlengine`` command, for ``rlengine plugins --check``.

Every command (``--help`` too) imports each plugin's entry point and the
classes of the commands it registers. This is measured in a fresh process
that has imported what the command line imports first, and, where the OS
can fork, once per plugin in a fork of it: each plugin pays for what it
imports, even a package another plugin imports as well (TensorFlow at the
top of a command module). Without fork the plugins are imported one after
the other, and a package two of them import is counted for the first.

``python -m rlengine.commands.import_times [DISABLED ...]`` prints the figures as JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any, Iterable

import attrs

#: A plugin adding more than this to every command is slow: a plugin that imports only its own module and
#: the core adds milliseconds; TensorFlow, PyTorch or Ray at the top of a module add seconds.
SLOW_SECONDS = 0.25


@attrs.frozen
class ImportTime:
    """What importing one plugin's entry point and command classes took, and what it brought in."""

    name: str
    distribution: str  # with its version
    seconds: float
    brought: tuple = ()  # third-party top-level packages the import added, largest first by module count
    error: str = ""  # why it could not be imported ('' when it was)

    @property
    def slow(self) -> bool:
        return self.seconds > SLOW_SECONDS


def measure(disabled: Iterable[str] = ()) -> list[ImportTime]:
    """The import time of every installed plugin but the ``disabled`` ones, measured in a fresh process."""
    done = subprocess.run([sys.executable, "-m", __name__, *disabled], capture_output=True, text=True, check=False,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": os.environ.get("TF_CPP_MIN_LOG_LEVEL", "3")})
    try:
        rows = json.loads(done.stdout.strip().splitlines()[-1])  # the last line: a plugin may print on import
        return [ImportTime(**{**row, "brought": tuple(row["brought"])}) for row in rows]
    except (ValueError, KeyError, TypeError, IndexError):
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return [ImportTime("(all)", "", 0.0, error=f"the measuring process failed: {last}")]


def _baseline() -> set:
    """Import what every command imports before the plugins; the modules then loaded."""
    import importlib

    import rlengine.plugin.manager  # noqa: F401

    importlib.import_module("rlengine.cli")  # by name: the command line is above this layer, measured, not used

    return set(sys.modules)


def _one(entry_point: Any, before: set) -> dict:
    """Import one plugin as the command line does; its row."""
    from rlengine.plugin.registry import load_reference

    found = getattr(entry_point, "dist", None)
    dist = f"{found.metadata['Name']} {found.version}" if found is not None else ""  # as error lines name it
    started = time.perf_counter()
    error = ""
    try:
        plugin = entry_point.load()
        for reference in _command_references(plugin):
            if isinstance(reference, str):
                load_reference(reference)
    except Exception as exc:  # reported by the contract checks too; here only its time counts
        error = f"{type(exc).__name__}: {exc}"
    seconds = time.perf_counter() - started
    own = entry_point.value.partition(":")[0].split(".")[0]
    added: dict[str, int] = {}
    for module in set(sys.modules) - before:
        top = module.split(".")[0]
        if top not in (own, "rlengine") and top not in sys.stdlib_module_names and not top.startswith("_"):
            added[top] = added.get(top, 0) + 1
    brought = sorted(added, key=lambda top: -added[top])[:3]
    return {"name": entry_point.name, "distribution": dist, "seconds": seconds, "brought": brought, "error": error}


def _command_references(plugin: Any) -> list:
    """The command classes (or their ``module:Class`` strings) ``plugin`` registers."""
    hook = getattr(plugin, "rlengine_register_commands", None)
    found: list = []
    if callable(hook):
        hook(register=lambda name, obj, *extra: found.append(obj))
    return found


def _measure_here(disabled: list) -> list[dict]:
    from rlengine.plugin.loading import entry_points

    before = _baseline()
    rows = []
    for entry_point in (e for e in entry_points([]) if e.name not in disabled):
        if not hasattr(os, "fork"):
            rows.append(_one(entry_point, set(sys.modules)))
            continue
        read, write = os.pipe()
        child = os.fork()
        if child == 0:  # the fork: this plugin alone on top of the command line's imports
            os.close(read)
            with os.fdopen(write, "w") as out:
                json.dump(_one(entry_point, before), out)
            os._exit(0)
        os.close(write)
        with os.fdopen(read) as answer:
            text = answer.read()
        os.waitpid(child, 0)
        rows.append(json.loads(text) if text else {"name": entry_point.name, "distribution": "", "seconds": 0.0,
                                                   "brought": [], "error": "its import ended the process"})
    return rows


if __name__ == "__main__":
    print(json.dumps(_measure_here(sys.argv[1:])))
