"""The base of the tracker writers (``mlflow``, ``wandb``): rows are thinned and queued, a sender thread logs them.

A tracker's own calls are slow for a training loop: opening an MLflow store
or starting a W&B run takes as long as hundreds of short iterations, logging
a row as long as one or more (``benchmarks/tracker_cost.py``,
docs/trackers.md). Two things keep that off the loop:

* **Thinning.** A metric is logged at most once per ``interval_secs``: the
  newest value since the last one, at the env step it was measured at
  (every row's values with ``interval_secs = 0``). The first row and every
  evaluation row go out whole, so no evaluation is ever thinned out. A
  tracker's charts hold a few thousand points either way, and its store
  stays small; ``metrics.jsonl`` and TensorBoard keep every row.
* **A sender thread.** ``write`` queues ``(timestamp_ms, env_steps, {key:
  value})`` rows and a :class:`~rlengine_writers.background.BackgroundSender`
  calls :meth:`TrackerWriter.send` with everything queued every
  ``flush_secs``; the first call starts the tracker run.

The thread's errors are raised at the next ``write``; one that no ``write``
could raise any more (the run's last rows) is raised by ``close`` when the
run itself succeeded, and only warned about when the run is failing
already, so the run's own error stays the one shown.

``close`` is bounded: it sends what is queued and ends the tracker run
within the writer's ``close_secs``, and waits for nothing while a second
Ctrl-C aborts the run (``KeyboardInterrupt``). What it could not send in
that time is dropped, with one line naming the count and the tracker's
address; the sender thread, a daemon, ends with the process.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Mapping, Optional

from rlengine import SummaryWriter
from rlengine.errors import one_line
from rlengine_writers.background import BackgroundSender, finished_within
from rlengine_writers.tracking import numeric_metrics, warn
from rlengine_writers.values import to_number

CLOSE_SECS = 30.0  # the trackers' default close_secs (docs/trackers.md)


class TrackerWriter(SummaryWriter):
    """A writer whose rows a sender thread logs to an experiment tracker."""

    #: Names the tracker in messages and the thread's name ("mlflow", "wandb").
    tracker = ""

    def __init__(self, root_dir: str, config: Any, total_env_steps: int = 0):
        super().__init__(root_dir, config, total_env_steps)
        self._sender: Optional[BackgroundSender] = None  # made by the first row
        self._closed = False
        self._held: dict[str, tuple[int, int, float]] = {}  # key -> (timestamp_ms, env_steps, value) not sent yet
        self._last_sent = -float("inf")  # time.monotonic() when the held values last went to the queue

    # -- for subclasses ----------------------------------------------------------------------
    def started(self) -> None:
        """Called on the training thread at the first row, before it is queued (``config.toml`` exists)."""

    def send(self, rows: list) -> None:
        """Log ``[(timestamp_ms, env_steps, {key: value}), ...]``; called on the sender thread only."""
        raise NotImplementedError

    def end(self, error: Optional[BaseException]) -> None:
        """End the tracker run, once the sender thread has stopped; called by :meth:`close`.

        ``error`` is the exception the run is ending with (``close`` runs while
        it propagates), or None when the run succeeded.
        """

    # -- SummaryWriter -----------------------------------------------------------------------
    def write(self, metrics: Mapping[str, Any]) -> None:
        if self._closed:
            raise ValueError(f"write() on a closed {self.tracker} writer ({self.root_dir})")
        if self._sender is None:
            self.started()
            self._sender = BackgroundSender(self.send, self.config.flush_secs, f"rlengine {self.tracker} writer")
        values = numeric_metrics(metrics)
        if not values:
            return
        timestamp, step = int(time.time() * 1000), int(to_number(metrics["env_steps"]) or 0)
        self._sender.raise_if_failed()
        if any(key.startswith("eval/") for key in values):  # evaluations whole, after what came before them
            self._release()
            self._sender.put((timestamp, step, values))
            return
        self._held.update((key, (timestamp, step, value)) for key, value in values.items())
        if time.monotonic() - self._last_sent >= self.config.interval_secs:
            self._release()

    def _release(self) -> None:
        """Queue the held values, one row per env step, in step order (W&B drops steps that go back)."""
        rows: dict[tuple[int, int], dict[str, float]] = {}
        for key, (timestamp, step, value) in self._held.items():
            rows.setdefault((step, timestamp), {})[key] = value
        for (step, timestamp), values in sorted(rows.items()):
            self._sender.put((timestamp, step, values))
        self._held = {}
        self._last_sent = time.monotonic()

    def flush(self) -> None:
        if self._sender is not None:
            self._release()
            self._sender.flush()

    def close(self) -> None:
        """Send what is queued and end the tracker run, in ``close_secs`` at most (none while a second Ctrl-C
        aborts); what could not be sent in that time is dropped, and one line says so."""
        if self._closed:
            return
        self._closed = True
        failing = sys.exc_info()[1]  # the engine closes writers while the run's error, if any, propagates
        aborting = isinstance(failing, KeyboardInterrupt)  # a second Ctrl-C: nothing may wait
        deadline = time.monotonic() + (0.0 if aborting else self.config.close_secs)
        error = None
        if self._sender is not None:
            if self._sender.error is None:
                self._release()  # the newest values of the run's end
            try:
                finished = self._sender.close(max(deadline - time.monotonic(), 0.0))
            except KeyboardInterrupt:  # a second Ctrl-C while waiting
                self._dropped("aborted")
                raise
            if not finished:  # the tracker run is not ended either: that call would wait on the same server
                self._dropped("aborted" if aborting else f"gave up after {self.config.close_secs:g} s "
                              f"({self.tracker}.close_secs)")
                return
            error = self._sender.unreported_error
        self._end_within(failing, deadline)
        if error is not None:
            if failing is None:  # closed on a run's success: its tracking failed unseen so far
                raise error
            warn(self.tracker, f"the last rows did not reach {self.tracker}: {error}")

    def _end_within(self, failing: Optional[BaseException], deadline: float) -> None:
        try:
            ended = finished_within(lambda: self.end(failing), deadline - time.monotonic(),
                                    f"rlengine {self.tracker} end")
            if not ended:
                warn(self.tracker, f"the {self.tracker} run at {self.destination()} was not ended within "
                                   f"{self.tracker}.close_secs = {self.config.close_secs:g} s: it may show as running")
        except Exception as exc:
            warn(self.tracker, f"the {self.tracker} run could not be ended: {type(exc).__name__}: {one_line(exc)}")

    def _dropped(self, why: str) -> None:
        """One line: what this writer did not send."""
        rows = self._sender.unsent if self._sender is not None else 0
        warn(self.tracker, f"{why} closing the writer: {rows} row(s) not sent to {self.destination()}, and its "
                           f"{self.tracker} run not ended")

    def destination(self) -> str:
        """Where the rows go, for messages (a tracking URI)."""
        return self.tracker
