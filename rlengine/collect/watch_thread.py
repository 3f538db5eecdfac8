"""The thread :class:`~rlengine.collect.faults.FaultWatch` runs collection calls on, while the caller watches.

A daemon thread, so a hung environment call cannot block interpreter exit;
between calls it holds none of the last call's objects, so runs made one
after another in a process do not keep each other's algorithms alive::

    thread = WatchThread()
    future = thread.submit(collect, carry)   # a concurrent.futures.Future
    ...                                      # the caller polls the env's timeout meanwhile
    thread.stop()                            # after the call it runs
"""

from __future__ import annotations

import concurrent.futures
import queue
import threading
from typing import Any, Callable


class WatchThread:
    """One daemon thread running calls handed to it (a hung call must not block interpreter exit)."""

    def __init__(self) -> None:
        self._calls: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._loop, name="rlengine-env-watch", daemon=True).start()

    def submit(self, fn: Callable, *args: Any) -> concurrent.futures.Future:
        future: concurrent.futures.Future = concurrent.futures.Future()
        self._calls.put((future, fn, args))
        return future

    def stop(self) -> None:
        """End the thread after the call it runs (a hung one: never; it is a daemon)."""
        self._calls.put(None)

    def _loop(self) -> None:
        while True:
            item = self._calls.get()
            if item is None:
                return
            future, fn, args = item
            try:
                future.set_result(fn(*args))
            except BaseException as exc:
                future.set_exception(exc)
            # while it waits for the next call, the thread must not keep this one's objects (the
            # run's algorithm, through ``fn``) alive: in-process runs one after another would pile up
            del item, future, fn, args
