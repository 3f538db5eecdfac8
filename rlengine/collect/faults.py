"""Environment faults: restart a crashed environment, stop on a hung one, refuse non-finite observations.

:class:`GuardedEnvironment` (:mod:`rlengine.collect.guarded_environment`,
exported here too) wraps the batched environment a factory makes: a crash
is a restart (same env ids, a fresh seed), returning the fresh ``FIRST``
steps in place of the failed step; after ``max_restarts`` restarts, a call
that does not answer within ``step_timeout`` seconds, or output that breaks
the spec, the run stops with one line naming the environment. This module
is the collector's side of it.

What a collector (a pipeline, an env thread) does with one::

    before = env.restarts                  # 1. before each unroll
    experience, carry = unroll(carry)      #    (env.step inside tf.numpy_function)
    if env.restarts != before:             # 2. the env was recreated during it:
        drop(experience)                   #    neither store nor train it; the carry
                                           #    goes on from the fresh env's FIRST rows
    # 3. errors: a fatal one raised inside a graph arrives as tf.errors.OpError;
    #    re-raise env.failure (the one-line EnvironmentFault) instead.
    # 4. timeouts: if env.needs_watcher, another thread must call
    #    env.check_responsive() every so often while the unroll runs (it raises
    #    EnvironmentTimeout once a call has run longer than step_timeout);
    #    otherwise the inner env enforces the timeout itself.

:class:`FaultWatch` does all of this for the synchronous pipelines: it runs
each collection call on a worker thread while the calling thread watches
(one hand-over per unroll, not per step).

Off-policy collectors that drop an unroll should also cut the stored episodes
(``ReplayBuffer.mark_newest_rows_last()``) and start again from a reset, so no
replayed transition joins the rows before the crash to the rows after it.
"""

from __future__ import annotations

import concurrent.futures
from typing import Any, Callable, Optional

import tensorflow as tf

from rlengine.api import Environment
from rlengine.collect.guarded_environment import (
    CLOSE_WAIT_SECONDS,
    RESTART_SEED_STRIDE,
    SHAPE_OR_DTYPE,
    GuardedEnvironment,
)
from rlengine.collect.watch_thread import WatchThread
from rlengine.errors import EnvironmentFault, EnvironmentTimeout

#: Imported from here by pipelines, the engine and plugins: the wrapper's names stay where they were.
__all__ = ["CLOSE_WAIT_SECONDS", "RESTART_SEED_STRIDE", "SHAPE_OR_DTYPE", "EnvironmentFault", "EnvironmentTimeout",
           "FaultWatch", "GuardedEnvironment"]


class FaultWatch:
    """Runs a pipeline's collection calls under the env timeout and tells which unrolls to drop.

    ``run(fn, *args) -> (result, dropped)``: ``dropped`` is True when the
    environment restarted during the call. A collection call that touches a
    :class:`GuardedEnvironment` in process runs on a worker thread while this
    thread watches it (one hand-over per unroll, not per step), so a hung
    step stops the run; errors the environment raised inside a graph come
    back as its own one-line error instead of a TensorFlow one.
    """

    def __init__(self, env: Environment):
        self.env = env if isinstance(env, GuardedEnvironment) else None
        self.dropped_unrolls = 0
        self._worker: Optional[WatchThread] = None

    @property
    def restarts(self) -> int:
        return self.env.restarts if self.env is not None else 0

    def metrics(self) -> dict:
        return {"train/env_restarts": float(self.restarts), "train/dropped_unrolls": float(self.dropped_unrolls)}

    def run(self, fn: Callable, *args: Any) -> tuple[Any, bool]:
        before = self.restarts
        result = self.call(fn, *args)
        dropped = self.restarts != before
        self.dropped_unrolls += dropped
        return result, dropped

    def call(self, fn: Callable, *args: Any) -> Any:
        try:
            if self.env is None or not self.env.needs_watcher:
                return fn(*args)
            return self._watched(fn, *args)
        except tf.errors.OpError:
            failure = self.env.failure if self.env is not None else None
            if failure is not None:  # the environment's own one-line error, keeping its cause for --debug
                raise failure from failure.__cause__
            raise

    def close(self) -> None:
        """End the worker thread, if one was started (the pipeline is stopping)."""
        if self._worker is not None:
            self._worker.stop()
            self._worker = None

    def _watched(self, fn: Callable, *args: Any) -> Any:
        if self._worker is None:
            self._worker = WatchThread()
        env = self.env
        assert env is not None  # call() watches only a guarded environment
        future = self._worker.submit(fn, *args)
        poll = min(env.step_timeout / 4, 0.5)
        while not concurrent.futures.wait([future], timeout=poll).done:
            env.check_responsive()  # raises once the env's call has run too long
        return future.result()
