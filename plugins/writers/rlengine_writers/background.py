"""A sender thread: rows queue in memory and go to a slow destination in batches, off the training thread.

Logging one row to MLflow's SQLite store costs milliseconds, a large part of
a short iteration; queuing it costs microseconds. The thread sends what has
queued every ``interval_secs`` (or at once on :meth:`flush` and
:meth:`close`), so many rows share one batch call. An error of the thread is
kept and raised on the training thread at the next ``put`` or ``flush``, so
a tracker that fails stops the run with its own message, not silently.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Optional


class BackgroundSender:
    """Calls ``send(items)`` from one daemon thread with everything ``put`` since the last call."""

    def __init__(self, send: Callable[[list], None], interval_secs: float, name: str):
        self._send, self._interval, self._name = send, interval_secs, name
        self._lock = threading.Condition()
        self._pending: list = []
        self._sending = False  # a batch is out of _pending but not sent yet
        self._in_flight = 0  # the items of that batch
        self._wake = False  # flush() or close() asked for a batch now
        self._closing = False
        self._done = False  # the thread has ended
        self._error: Optional[BaseException] = None
        self._reported = False  # put() or flush() has raised _error
        self._thread: Optional[threading.Thread] = None
        #: CPU seconds the thread used, once it has ended (what the sending cost, beside the training)
        self.cpu_seconds = 0.0

    @property
    def error(self) -> Optional[BaseException]:
        """The exception that stopped the thread, if one did."""
        return self._error

    def put(self, item: Any) -> None:
        """Queue ``item``; raises the thread's error, if it failed."""
        self.raise_if_failed()
        with self._lock:
            if self._closing:
                raise ValueError(f"put() on a closed {self._name}")
            self._pending.append(item)
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._thread.start()

    def flush(self) -> None:
        """Wait until everything queued so far is sent; raises the thread's error, if it failed."""
        with self._lock:
            self._wake = True
            self._lock.notify_all()
            self._lock.wait_for(lambda: self._thread is None or self._done or not (self._pending or self._sending))
        self.raise_if_failed()

    def close(self, timeout: Optional[float] = None) -> bool:
        """Send what is queued and stop the thread, waiting ``timeout`` seconds at most (None: as long as it
        takes); whether the thread ended. Does not raise: see :attr:`unreported_error`.

        A thread still sending when the time is up is left behind (it is a daemon: it ends with the
        process); :attr:`unsent` counts what it holds.
        """
        with self._lock:
            self._closing = True
            self._lock.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)
        return self._thread is None or not self._thread.is_alive()

    @property
    def unsent(self) -> int:
        """Items queued or being sent that have not gone out (all of them, until the thread has ended)."""
        with self._lock:
            return len(self._pending) + self._in_flight

    @property
    def unreported_error(self) -> Optional[BaseException]:
        """The thread's error if no ``put`` or ``flush`` has raised it yet (it failed on the last rows)."""
        return None if self._reported else self._error

    def raise_if_failed(self) -> None:
        if self._error is not None:
            self._reported = True
            raise self._error

    def _run(self) -> None:
        try:
            self._loop()
        except BaseException as exc:  # kept for the training thread; the rows of that batch are lost here
            self._error = exc
        finally:
            self.cpu_seconds = time.thread_time()  # this thread's own CPU time since it started
            with self._lock:
                self._sending, self._done = False, True
                self._lock.notify_all()

    def _loop(self) -> None:
        while True:
            with self._lock:
                self._lock.wait_for(lambda: self._wake or self._closing, timeout=self._interval)
                batch, self._pending = self._pending, []
                self._sending, self._wake, closing = bool(batch), False, self._closing
                self._in_flight = len(batch)
            if batch:
                self._send(batch)
            with self._lock:
                self._sending, self._in_flight = False, 0
                self._lock.notify_all()
                if closing and not self._pending:
                    return


def finished_within(call: Callable[[], None], seconds: float, name: str) -> bool:
    """Run ``call`` in a daemon thread and wait ``seconds`` at most; whether it ended. Its error is raised here.

    For a tracker's last call (ending its run) on a server that may not answer: the process need not
    wait for it, and a daemon thread left behind ends with the process.
    """
    errors: list = []

    def run() -> None:
        try:
            call()
        except BaseException as exc:  # raised on the calling thread below
            errors.append(exc)

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    thread.join(max(seconds, 0.0))
    if errors:
        raise errors[0]
    return not thread.is_alive()
