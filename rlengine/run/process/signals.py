"""Graceful stop on SIGINT / SIGTERM while ``Engine.train()`` runs.

The handlers only record the request (in :mod:`rlengine.collect.stopping`,
where the environment watchers see it too): the trainer checks
:func:`stop_requested` once per iteration, finishes it, writes a
checkpoint and raises :class:`rlengine.errors.TrainingInterrupted`, so the
``finally`` blocks that close environments and threads run as usual. Long
waits do not hold the stop up: an evaluation ends between two steps, and an
environment call still running :data:`~rlengine.collect.stopping.GRACE_SECONDS`
after the request is abandoned (the checkpoint then holds the state before
that iteration). A second SIGINT does not wait at all: it raises
``KeyboardInterrupt`` at once (a third gets the handler that was there
before training).

Handlers are installed only in the main thread (Python allows no other)
and only inside :func:`stop_on_signals`; the previous handlers come back on
exit, so a notebook's Ctrl-C behaves normally after training. While they are
installed, a daemon thread also hears each signal through Python's wakeup
fd (:func:`signal.set_wakeup_fd`), so the request is recorded (and the
environment watchers see it) even while the main thread is blocked inside
TensorFlow, where no Python handler can run. A signal the
process inherited as ignored (``SIG_IGN``: a background job of a
non-interactive shell, ``nohup``-style launchers) stays ignored. Python runs
a handler when the main thread next executes Python code, so "at once"
means after the TensorFlow call in progress (one unroll or one update call).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from typing import Any, Iterator, Optional

from rlengine.collect import stopping

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def stop_requested() -> Optional[int]:
    """The number of the signal that asked training to stop, or None."""
    return stopping.requested()


def request_stop(signal_number: int) -> None:
    """Ask the running trainer to stop after its current iteration (also usable without a signal)."""
    stopping.request(signal_number)


def clear() -> None:
    global _handled
    stopping.clear()
    _handled = False


_lock = threading.Lock()  # the handler and the listener thread may record the same signal at once
_handled = False  # the Python handler has run for a stop signal: a second SIGINT aborts


def _record(signal_number: int) -> None:
    """Record the stop request; the first one is announced."""
    with _lock:
        first = stop_requested() is None
        request_stop(signal_number)
    if first:
        name = signal.Signals(signal_number).name
        print(f"rlengine: {name} received; finishing the current iteration and saving a checkpoint "
              "(press Ctrl-C again to abort at once)", file=sys.stderr, flush=True)


def _handle(signal_number: int, frame: Any) -> None:
    global _handled
    if _handled and signal_number == signal.SIGINT:
        # the user insists: give Ctrl-C back its old meaning, then abort now
        signal.signal(signal.SIGINT, _previous.get(signal.SIGINT, signal.default_int_handler))
        raise KeyboardInterrupt
    _handled = True
    _record(signal_number)


def _listen(read_fd: int) -> None:
    """Record every stop signal the wakeup fd reports, until its write end is closed."""
    try:
        while data := os.read(read_fd, 64):
            for number in data:
                if number in _previous:  # ours (not an ignored one, nor another handler's signal)
                    _record(number)
    except OSError:
        pass
    finally:
        os.close(read_fd)


@contextlib.contextmanager
def _listening() -> Iterator[None]:
    """A wakeup fd read by a daemon thread for the duration of the block (the previous fd comes back)."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)  # set_wakeup_fd requires it; a full pipe just drops a byte
    previous = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    threading.Thread(target=_listen, args=(read_fd,), name="rlengine-signal-listener", daemon=True).start()
    try:
        yield
    finally:
        signal.set_wakeup_fd(previous)
        os.close(write_fd)  # the listener reads the end of the pipe and closes its side


_previous: dict = {}  # signal -> handler before stop_on_signals() installed ours
_active = False  # inside stop_on_signals(): a nested block changes nothing


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """Turn SIGINT / SIGTERM into a stop request for the duration of the block.

    Outside the main thread (or nested inside another such block) it does
    nothing, since only the main thread may install handlers; a signal that
    is ignored (``SIG_IGN``) keeps being ignored.
    """
    global _active
    if threading.current_thread() is not threading.main_thread() or _active:
        yield
        return
    _active = True
    clear()
    try:
        for sig in STOP_SIGNALS:
            handler = signal.getsignal(sig)
            if handler is signal.SIG_IGN:  # whoever started us asked for it to be ignored
                continue
            _previous[sig] = handler
            signal.signal(sig, _handle)
        with _listening():
            yield
    finally:
        for sig, handler in _previous.items():
            # getsignal() gives None for handlers not installed from Python; the default is closest
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)
        _previous.clear()
        clear()
        _active = False
