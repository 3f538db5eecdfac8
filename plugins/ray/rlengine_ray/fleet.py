"""The runners of one run: their sample requests in flight, their answers, failures and restarts.

The pipeline asks the fleet for answers, one at a time::

    fleet.start()                      # every runner built and checked (describe) before anything samples
    fleet.publish(values, version)     # one ray.put per policy version; runners fetch it themselves
    unroll = fleet.next_unroll()       # the next answer of any runner; requests are topped up first
    fleet.stop()                       # every actor killed, however the run ends

A runner holds at most ``max_in_flight_per_runner`` requests. When one
fails (its process killed, its node gone, its environment raising, or no
answer within ``answer_timeout``), its requests in flight are dropped, it
is killed if still alive so that Ray restarts it, and it samples again
only once the restarted actor answers ``describe``; every request carries
the current weights, so its first unroll uses them. Past
``max_runner_restarts`` restarts of one runner the run stops, with one
line naming the runner and the cause.
"""

from __future__ import annotations

import collections
import logging
import time
from typing import Any, Callable, NamedTuple, Optional

import ray
from ray.exceptions import RayError, RayTaskError

from rlengine.collect import stopping
from rlengine.errors import WorkerError, one_line

log = logging.getLogger("rlengine.ray")

WAIT_SLICE = 0.5  # seconds per ray.wait, between looks at hung runners and stop requests


class Request(NamedTuple):
    runner: int
    number: int


class RunnerFleet:
    """Owns the runner actors and everything in flight to them."""

    def __init__(self, start_actor: Callable[[int], Any], num_runners: int, max_in_flight: int,
                 max_restarts: int, answer_timeout: float, start_timeout: float,
                 check_description: Callable[[dict], None], on_restart: Callable[[int], None]):
        self.start_actor = start_actor
        self.num_runners = num_runners
        self.max_in_flight = max_in_flight
        self.max_restarts = max_restarts
        self.answer_timeout = answer_timeout  # 0: runners are never timed out
        self.start_timeout = start_timeout
        self.check_description = check_description
        self.on_restart = on_restart  # the pipeline's part of a restart (cut the runner's stored episodes)
        self.holding: Callable[[int], int] = lambda r: 0  # answers of runner r the pipeline keeps for later
        self.actors: list = []
        self.in_flight: dict = {}  # ObjectRef -> Request
        self.starting: dict = {}  # ObjectRef of a describe call -> runner index
        self.ready = [False] * num_runners
        self.progress = [0.0] * num_runners  # monotonic time of each runner's last answer (or start)
        self.answered = [False] * num_runners  # whether each runner's current life answered a sample (traced)
        self.restarts = [0] * num_runners
        self.causes: list = [None] * num_runners
        self.weights: Optional[Any] = None
        self.version = -1
        self.random_actions = False
        self.requests = 0
        self.descriptions: list = [None] * num_runners  # what each runner's current life answered describe
        self.incarnations: list = [None] * num_runners  # of each runner's current life
        self.failed_incarnations: list = [None] * num_runners  # of each runner's last failed life
        # each runner's unrolls are handed on in the order it collected them (the replay's rows and row 0 of
        # each unroll rely on it), though ray.wait may see a later one ready first
        self.expected = [0] * num_runners  # the sequence number each runner's next unroll must have
        self.early: list = [dict() for _ in range(num_runners)]  # sequence -> unroll that came before its turn
        self.deliverable: collections.deque = collections.deque()
        self.duplicates = 0

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        """Create every runner and wait until each has built (answered ``describe``)."""
        self.actors = [self.start_actor(r) for r in range(self.num_runners)]
        for r in range(self.num_runners):
            self._ping(r)
        deadline = time.monotonic() + self.start_timeout
        while self.starting:
            if time.monotonic() > deadline:
                waiting = sorted(self.starting.values())
                raise WorkerError(f"ray runners {waiting} did not start within ray.start_timeout = "
                                  f"{self.start_timeout:g} s; raise it, or check the cluster has "
                                  "ray.num_cpus_per_runner free for each runner")
            self._wait(list(self.starting), WAIT_SLICE)

    def stop(self) -> None:
        for actor in self.actors:
            try:
                ray.kill(actor, no_restart=True)
            except Exception:  # already gone
                pass
        self.actors, self.in_flight, self.starting = [], {}, {}

    def publish(self, values: Any, version: int) -> None:
        """Make ``values`` the weights of every request from now on (one ``ray.put``)."""
        self.weights, self.version = ray.put(values), version

    @property
    def total_restarts(self) -> int:
        return sum(self.restarts)

    # -- answers -------------------------------------------------------------------------------
    def next_unroll(self) -> Any:
        """The next unroll any runner returns; failed runners are restarted meanwhile."""
        since = time.perf_counter()
        while not self.deliverable:
            self._top_up()
            refs = list(self.in_flight) + list(self.starting)
            if not refs:
                raise WorkerError("no ray runner is left to sample from")
            self._wait(refs, WAIT_SLICE)
            self._time_out_hung()
            if stopping.holds_up_stop(since):
                raise stopping.StopRequested("waiting for ray runners stopped: a stop was requested")
        return self.deliverable.popleft()

    def _wait(self, refs: list, timeout: float) -> None:
        """Handle what became ready: started runners, failures, unrolls (queued in their runner's order)."""
        ready, _ = ray.wait(refs, num_returns=1, timeout=timeout)
        for ref in ready:
            if ref in self.starting:
                self._started(ref)
                continue
            request = self.in_flight.pop(ref, None)
            if request is None:
                continue  # dropped with its runner's failure
            try:
                unroll = ray.get(ref)
            except RayError as exc:
                self._failed(request.runner, exc)
                continue
            self.progress[request.runner] = time.monotonic()
            self.answered[request.runner] = True
            self._accept(unroll)

    def _accept(self, unroll: Any) -> None:
        """Queue ``unroll`` once its runner's earlier ones are queued; one seen before is counted, not queued."""
        r = unroll.runner
        if unroll.incarnation != self.incarnations[r]:
            return  # collected by a life of the runner that has ended: dropped with its failure
        if unroll.sequence < self.expected[r] or unroll.sequence in self.early[r]:
            self.duplicates += 1
            return
        self.early[r][unroll.sequence] = unroll
        while self.expected[r] in self.early[r]:
            self.deliverable.append(self.early[r].pop(self.expected[r]))
            self.expected[r] += 1

    def _top_up(self) -> None:
        """Give every ready runner requests up to ``max_in_flight``, counting the answers it gave that are
        not consumed yet: a runner faster than the others would otherwise pile up unrolls of old versions."""
        counts = [len(self.early[r]) + self.holding(r) for r in range(self.num_runners)]
        for request in self.in_flight.values():
            counts[request.runner] += 1
        for unroll in self.deliverable:
            counts[unroll.runner] += 1
        for r in range(self.num_runners):
            for _ in range(self.max_in_flight - counts[r] if self.ready[r] else 0):
                ref = self.actors[r].sample.remote(self.requests, [self.weights], self.version, self.random_actions)
                self.in_flight[ref] = Request(r, self.requests)
                self.requests += 1

    # -- failures and restarts -------------------------------------------------------------------------
    def _ping(self, r: int) -> None:
        self.ready[r] = self.answered[r] = False
        self.starting[self.actors[r].describe.remote()] = r
        self.progress[r] = time.monotonic()

    def _started(self, ref: Any) -> None:
        r = self.starting.pop(ref)
        try:
            description = ray.get(ref)
        except RayError as exc:  # still restarting, or gone for good
            if _permanently_dead(exc) or time.monotonic() - self.progress[r] > self.start_timeout:
                raise WorkerError(f"ray runner {r} could not be started: {_cause(exc)}") from None
            time.sleep(WAIT_SLICE)
            self.starting[self.actors[r].describe.remote()] = r
            return
        if description["incarnation"] == self.failed_incarnations[r]:
            # the failed life answered before its kill landed: requests sent now would meet the restart
            if time.monotonic() - self.progress[r] > self.start_timeout:
                raise WorkerError(f"ray runner {r} could not be restarted: its failed process still answers")
            time.sleep(WAIT_SLICE)
            self.starting[self.actors[r].describe.remote()] = r
            return
        self.check_description(description)
        self.descriptions[r] = description
        self.incarnations[r], self.expected[r], self.early[r] = description["incarnation"], 0, {}
        self.ready[r] = True
        self.progress[r] = time.monotonic()

    def _failed(self, r: int, error: BaseException, kill: Optional[bool] = None) -> None:
        """Runner ``r`` failed: drop what it holds, let Ray restart it, or stop the run past the limit."""
        if not self.ready[r]:
            return  # a request sent before the failure already handled
        cause = _cause(error)
        self.restarts[r] += 1
        self.causes[r] = cause
        if self.restarts[r] > self.max_restarts:
            raise WorkerError(f"ray runner {r} failed {self.restarts[r]} times, more than ray.max_runner_restarts "
                              f"= {self.max_restarts}; the last time: {cause}") from None
        log.warning("ray runner %d failed (%s); restarting it (%d of ray.max_runner_restarts = %d)",
                    r, cause, self.restarts[r], self.max_restarts)
        self.in_flight = {ref: q for ref, q in self.in_flight.items() if q.runner != r}
        self.failed_incarnations[r] = self.incarnations[r]
        self.early[r], self.incarnations[r] = {}, None  # its unrolls still to come would follow a lost one
        self.deliverable = collections.deque(u for u in self.deliverable if u.runner != r)
        if kill if kill is not None else isinstance(error, RayTaskError):  # alive but broken: Ray restarts it
            ray.kill(self.actors[r], no_restart=False)
        self.on_restart(r)
        self._ping(r)

    def _time_out_hung(self) -> None:
        if not self.answer_timeout:
            return
        now = time.monotonic()
        busy = {q.runner for q in self.in_flight.values()}
        for r in busy:  # a runner's first unroll also traces its collector: it gets the start timeout on top
            limit = self.answer_timeout + (0.0 if self.answered[r] else self.start_timeout)
            if self.ready[r] and now - self.progress[r] > limit:
                self._failed(r, TimeoutError(f"no unroll within {self.answer_timeout:g} s (train.env_step_timeout "
                                             "x train.unroll_length)"), kill=True)


def _permanently_dead(error: BaseException) -> bool:
    return "permanently" in str(error) or "creation task" in str(error)


def _cause(error: BaseException) -> str:
    """One line: the error a runner's own code raised, else what Ray says happened to it."""
    inner = getattr(error, "cause", None) if isinstance(error, RayTaskError) else None
    if isinstance(inner, BaseException):
        return one_line(inner)
    text = [line.strip() for line in str(error).splitlines() if line.strip()]
    return text[0] if text else type(error).__name__
