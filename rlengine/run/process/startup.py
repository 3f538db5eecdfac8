"""Where a run's start-up goes: seconds per phase, from the process's start to the end of the first iteration.

A run reports them once, as ``startup/<phase>`` keys on its first iteration's
row (and in :attr:`rlengine.run.trainer.TrainResult.startup`):

- ``imports``: the process started, then Python, rlengine, TensorFlow and the
  command's modules loaded, until the :class:`~rlengine.run.engine.Engine` was
  created. Only the first Engine of a process reports it: a later one (a tuner's
  trial, a notebook's second run) did not pay for the imports.
- ``config``: plugins loaded and the config built, until ``train()`` began.
- ``build``: the environments, spec preparation (the dummy step), the
  algorithm, the pipeline and the writers.
- ``restore``: the newest checkpoint read back (about nothing for a new run).
- ``first_iteration``: the first iteration: tracing its graphs, then running it.
- ``total``: the sum, the time from the process's (or the Engine's) start to
  the end of the first iteration.
"""

from __future__ import annotations

import os
import time
from typing import Optional

#: Whether an Engine of this process has reported ``imports`` already.
_imports_reported = False


def process_age() -> Optional[float]:
    """Seconds since this process started (Linux: ``/proc``), or None where that cannot be read."""
    try:
        with open("/proc/self/stat", "rb") as f:
            # the command name (field 2) may hold spaces: the fields after it start past its ")"
            fields = f.read().rsplit(b")", 1)[1].split()
        with open("/proc/uptime", "rb") as f:
            uptime = float(f.read().split()[0])
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22, starttime, in clock ticks since boot
    except (OSError, ValueError, IndexError):
        return None
    return max(uptime - started, 0.0)


class StartupClock:
    """Marks the end of each start-up phase; ``phase(name)`` books the time since the previous mark."""

    def __init__(self) -> None:
        global _imports_reported
        now = time.perf_counter()
        self.seconds: dict[str, float] = {}
        self._last = now
        age = None if _imports_reported else process_age()
        _imports_reported = True
        if age is not None:
            self.seconds["imports"] = age
        self._origin = now - (age or 0.0)
        self.done = False

    def phase(self, name: str) -> None:
        """End the phase ``name`` now (a phase ended twice adds up)."""
        if self.done:
            return
        now = time.perf_counter()
        self.seconds[name] = self.seconds.get(name, 0.0) + now - self._last
        self._last = now

    def finish(self, last_phase: str) -> dict[str, float]:
        """End ``last_phase`` and the start-up; the ``startup/<phase>`` metrics (empty if finished before)."""
        if self.done:
            return {}
        self.phase(last_phase)
        self.done = True
        self.seconds["total"] = self._last - self._origin
        return {f"startup/{name}": value for name, value in self.seconds.items()}
