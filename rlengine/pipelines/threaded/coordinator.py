"""Start and stop the worker threads of a run; carry a worker's error to the main thread.

Every worker runs under :meth:`Coordinator.start`. The first exception in
any of them is recorded and stops the run: the coordinator closes every
queue, so threads blocked on one wake up (their queue op fails, which they
take as the signal to leave), and the main thread re-raises the recorded
error from :meth:`check`::

    coordinator = Coordinator(queues.close_all)
    coordinator.start("env thread 0", env_thread.run)
    ...
    coordinator.check()          # in the learner loop: raises a worker's error
    coordinator.stop()           # closes the queues and joins every thread
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Optional

import tensorflow as tf

from rlengine.errors import WorkerError

#: Queue errors a worker sees once the queues are closed: a normal way out when stopping.
QUEUE_CLOSED = (tf.errors.CancelledError, tf.errors.OutOfRangeError)


class Coordinator:
    """Owns the threads of one run and the order in which they stop."""

    def __init__(self, close_queues: Callable[[], None], join_timeout: float = 3.0):
        self._close_queues = close_queues
        self._join_timeout = join_timeout
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._error: Optional[WorkerError] = None
        self.threads: list[threading.Thread] = []

    def start(self, name: str, target: Callable[[], None], describe: Callable[[], str] = lambda: "") -> None:
        """Run ``target`` in a daemon thread called ``name``.

        ``describe`` adds what the thread works on (e.g. an env id) to the
        error message if it fails.
        """
        thread = threading.Thread(target=self._guarded, args=(name, target, describe), name=name, daemon=True)
        self.threads.append(thread)
        thread.start()

    def _guarded(self, name: str, target: Callable[[], None], describe: Callable[[], str]) -> None:
        try:
            target()
        except BaseException as exc:  # every failure must reach the main thread
            if not (self._stop.is_set() and isinstance(exc, QUEUE_CLOSED)):  # a thread may name another
                self.request_stop(exc if isinstance(exc, WorkerError) else WorkerError.of(name, describe(), exc))

    def request_stop(self, error: Optional[WorkerError] = None) -> None:
        """Ask every thread to stop; the first error recorded is the one re-raised."""
        with self._lock:
            if error is not None and self._error is None:
                self._error = error
            already = self._stop.is_set()
            self._stop.set()
        if not already:
            self._close_queues()

    def should_stop(self) -> bool:
        return self._stop.is_set()

    def wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds``, waking when a stop is requested; returns whether it was."""
        return self._stop.wait(seconds)

    @property
    def error(self) -> Optional[WorkerError]:
        return self._error

    def check(self) -> None:
        """Re-raise a worker's error in the calling (main) thread."""
        if self._error is not None:
            raise self._error

    def stop(self) -> list[str]:
        """Stop and join every thread; returns the names of threads still alive after the timeout."""
        self.request_stop()
        deadline = time.monotonic() + self._join_timeout
        for thread in self.threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        return [t.name for t in self.threads if t.is_alive()]
