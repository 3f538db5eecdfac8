"""Stop requests, which long waits honour: an evaluation, an environment that does not answer.

:mod:`rlengine.run.process.signals` turns SIGINT / SIGTERM into a request here (so
this low layer, which the environment watchers live in, can see it without
importing the run layer). A training iteration is finished before the run
stops, but a call that holds the stop up for longer than
:data:`GRACE_SECONDS` is given up: an environment step that hangs is
abandoned by its watcher (:meth:`GuardedEnvironment.check_responsive`),
and the evaluator ends between two steps (:class:`StopRequested`).
"""

from __future__ import annotations

import time
from typing import Optional

from rlengine.errors import StopRequested

#: How long one environment call may hold up a requested stop before it is abandoned. Long enough for
#: any step that is merely slow to end, short enough that Ctrl-C still feels like it works.
GRACE_SECONDS = 2.0

_signal: Optional[int] = None  # the first stop signal received, or None
_since: Optional[float] = None  # perf_counter() time it arrived


def request(signal_number: int) -> None:
    """Ask the running trainer to stop; the first request is the one kept."""
    global _signal, _since
    if _signal is None:
        _signal, _since = signal_number, time.perf_counter()


def requested() -> Optional[int]:
    """The number of the signal that asked the run to stop, or None."""
    return _signal


def clear() -> None:
    global _signal, _since
    _signal = _since = None


def holds_up_stop(busy_since: float) -> bool:
    """Whether a call that began at ``busy_since`` (``perf_counter()``) has held up a requested stop
    for longer than :data:`GRACE_SECONDS`."""
    since = _since
    return since is not None and time.perf_counter() - max(since, busy_since) > GRACE_SECONDS


def raise_if_requested(what: str) -> None:
    """Raise :class:`StopRequested` if a stop was requested; ``what`` names the call it ends."""
    if _signal is not None:
        raise StopRequested(f"{what} stopped: a stop was requested")
