"""Graceful stop on SIGINT / SIGTERM while ``Engine.train()`` runs.

The handlers only record the request: the trainer checks
:func:`stop_requested` once per iteration, finishes it, writes a
checkpoint and raises :class:`rlengine.errors.TrainingInterrupted`, so the
``finally`` blocks that close environments and threads run as usual. A
second SIGINT does not wait for the iteration: it raises
``KeyboardInterrupt`` at once (a third gets the handler that was there
before training).

Handlers are installed only in the main thread (Python allows no other)
and only inside :func:`stop_on_signals`; the previous handlers come back on
exit, so a notebook's Ctrl-C behaves normally after training. Python runs a
handler when the main thread next executes Python code, so "at once" means
after the TensorFlow call in progress (one unroll or one update call).
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from typing import Any, Iterator, Optional

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

_requested: Optional[int] = None  # the first stop signal received, or None


def stop_requested() -> Optional[int]:
    """The number of the signal that asked training to stop, or None."""
    return _requested


def request_stop(signal_number: int) -> None:
    """Ask the running trainer to stop after its current iteration (also usable without a signal)."""
    global _requested
    if _requested is None:
        _requested = signal_number


def clear() -> None:
    global _requested
    _requested = None


def _handle(signal_number: int, frame: Any) -> None:
    if _requested is not None and signal_number == signal.SIGINT:
        # the user insists: give Ctrl-C back its old meaning, then abort now
        signal.signal(signal.SIGINT, _previous.get(signal.SIGINT, signal.default_int_handler))
        raise KeyboardInterrupt
    first = _requested is None
    request_stop(signal_number)
    if first:
        name = signal.Signals(signal_number).name
        print(f"rlengine: {name} received; finishing the current iteration and saving a checkpoint "
              "(press Ctrl-C again to abort at once)", file=sys.stderr, flush=True)


_previous: dict = {}  # signal -> handler before stop_on_signals() installed ours


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """Turn SIGINT / SIGTERM into a stop request for the duration of the block.

    Outside the main thread (or nested inside another such block) it does
    nothing, since only the main thread may install handlers.
    """
    if threading.current_thread() is not threading.main_thread() or _previous:
        yield
        return
    clear()
    try:
        for sig in STOP_SIGNALS:
            _previous[sig] = signal.getsignal(sig)
            signal.signal(sig, _handle)
        yield
    finally:
        for sig, handler in _previous.items():
            # getsignal() gives None for handlers not installed from Python; the default is closest
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)
        _previous.clear()
        clear()
