"""The asynchronous pipeline: env threads and actor threads collect while the learner trains.

Registered as ``train.pipeline = "async"`` (settings: ``[async]``,
:class:`~rlengine.pipelines.threaded.config.AsyncConfig`). One iteration
takes one unroll off the learner queue, from whichever env thread finished
first::

    unroll = learner_queue.dequeue()           # [T + 1, B_i] rows of env thread i
    off-policy:  replay.add(unroll); updates from replay (none while warming up)
    on-policy:   drop it if older than max_policy_lag versions, else train on it
    policy_version += 1                        # after every trained unroll

The rules (warm-up, updates per unroll, policy lag, dropped unrolls) are those of
:class:`~rlengine.learn.schedule.UpdateSchedule`, as in the sync and Ray pipelines.

Off-policy, the dequeue, the store and the updates are one graph call: on
two cores the eager ops between separate calls (the dequeue, an
``ensure_shape`` per leaf) cost more than the collection the threads save.

Actors read the variables the learner writes (no copies); each unroll
carries the policy version that started it, so the learner reports the lag.
"""

from __future__ import annotations

import time
from typing import Any

import tensorflow as tf

from rlengine.api.pipeline import Iteration, Pipeline, PipelineContext
from rlengine.api.placement import actor_device
from rlengine.collect.faults import EnvironmentFault, EnvironmentTimeout
from rlengine.collect.fixed_signature import FixedSignatureFunction
from rlengine.errors import WorkerError
from rlengine.learn.schedule import UpdateSchedule
from rlengine.pipelines.threaded.config import AsyncConfig, thread_layout
from rlengine.pipelines.threaded.coordinator import QUEUE_CLOSED, Coordinator
from rlengine.pipelines.threaded.queues import RunQueues, Unroll
from rlengine.pipelines.threaded.threads import ActorThread, EnvThread, PolicyActor

WATCH_INTERVAL = 0.5  # seconds between the watchdog's looks at the in-process environments


class AsyncPipeline(Pipeline):
    """Owns the queues, the threads and their coordinator for one run."""

    config_class = AsyncConfig

    @classmethod
    def env_layout(cls, train: Any, config: AsyncConfig, algorithm_class: Any) -> list[tuple[int, int]]:
        return thread_layout(train, config, not algorithm_class.off_policy)

    @classmethod
    def runtime_threads(cls, train: Any, config: AsyncConfig) -> int:
        # Every env thread may be stepping (holding a pool thread) at once; one more keeps the actors and the
        # learner moving meanwhile. Fewer only serialises (queue waits hold no pool thread), more slows the learner.
        return config.num_env_threads + 1

    def __init__(self, context: PipelineContext, config: AsyncConfig):
        super().__init__(context, config)
        envs, chain, specs, converters = context.envs, context.chain, context.specs, context.converters
        cfg, async_cfg = context.config.train, config
        self.algorithm, self.learner, self.replay = context.algorithm, context.learner, context.replay
        algorithm = self.algorithm
        self.unroll_length = cfg.unroll_length
        self.schedule = UpdateSchedule(algorithm, self.replay, max_policy_lag=async_cfg.max_policy_lag)
        num_actors = async_cfg.num_actor_threads
        served = [[i for i in range(len(envs)) if i % num_actors == a] for a in range(num_actors)]
        capacity = async_cfg.actor_queue_capacity or max((len(s) for s in served), default=1)
        self._new_queues = lambda: RunQueues(specs, [e.batch_size for e in envs], num_actors, capacity,
                                             async_cfg.learner_queue_capacity)
        self.queues = self._new_queues()  # replaced at each start: closed queues cannot reopen
        self.coordinator = Coordinator(self.queues.close_all)
        self.random_actions = tf.Variable(bool(self.schedule.warming_up(0)), trainable=False, name="random_actions")
        self.policy_version = tf.Variable(0, dtype=tf.int64, trainable=False, name="policy_version")
        policy = PolicyActor(algorithm, converters, specs, self.random_actions, self.policy_version,
                             actor_device(cfg))
        self.env_threads = [EnvThread(i, env, chain, algorithm, specs, self.queues,
                                      i % num_actors if num_actors else None, policy, cfg.unroll_length)
                            for i, env in enumerate(envs)]
        self.actors = [ActorThread(a, policy, self.queues, served[a]) for a in range(num_actors)]
        self.receive = FixedSignatureFunction(self._receive_unroll)
        self.receive_and_store = FixedSignatureFunction(self._receive_and_store)
        self.receive_and_train = FixedSignatureFunction(self._receive_and_train)
        # env threads whose first row is already stored (later unrolls repeat it as their row 0)
        self.first_row_stored = tf.Variable(tf.zeros([len(envs)], tf.bool), trainable=False, name="first_row_stored")
        self._collecting_at_random = bool(self.random_actions.numpy())
        self.dropped_unrolls = 0  # their environment was recreated mid-unroll
        self.stale_unrolls = 0  # on-policy: older than max_policy_lag
        self.started = False

    # -- lifecycle -------------------------------------------------------------
    def start(self) -> None:
        """Start every thread on fresh queues (a stopped pipeline may start again)."""
        if self.started:
            self.stop()
            self.queues = self._new_queues()
            self.coordinator = Coordinator(self.queues.close_all)
            if self.replay is not None:  # the env threads reset their environments: new episodes begin
                self.schedule.dropped()
                self.first_row_stored.assign(tf.zeros_like(self.first_row_stored))
        for actor in self.actors:
            self.coordinator.start(f"actor thread {actor.index}", self._runner(actor), actor.describe)
        for thread in self.env_threads:
            self.coordinator.start(f"env thread {thread.index}", self._runner(thread), thread.describe)
        watched = [t for t in self.env_threads if getattr(t.env, "needs_watcher", False)]
        if watched:
            self.coordinator.start("env watchdog", lambda: self._watch(watched, self.coordinator))
        self.started = True
        self._last_counts = self._counts()

    def _runner(self, worker: Any) -> Any:
        coordinator, queues = self.coordinator, self.queues
        return lambda: worker.run(coordinator, queues)

    @staticmethod
    def _watch(threads: list, coordinator: Coordinator) -> None:
        """Stop the run when an in-process environment does not answer within train.env_step_timeout.

        Its env thread stays blocked in the environment's step (Python cannot
        interrupt it) and is left behind as a daemon; worker-process
        environments time out by themselves and are terminated.
        """
        while not coordinator.wait(WATCH_INTERVAL):
            for thread in threads:
                try:
                    thread.env.check_responsive()
                except EnvironmentTimeout as exc:
                    raise WorkerError.of(f"env thread {thread.index}", f"{thread.describe()}; found by the watchdog",
                                         exc) from exc
                except EnvironmentFault:
                    pass  # any other error of its environment: the env thread itself reports it

    def stop(self) -> list:  # type: ignore[override]
        """Close the queues and join every thread; the names of threads that did not stop in time."""
        return self.coordinator.stop() if self.started else []

    # -- one iteration -------------------------------------------------------------
    def iterate(self, env_steps: int) -> Iteration:
        t0 = time.perf_counter()
        if self.schedule.from_replay:  # stored and trained from replay inside the call
            (unroll, lag, waited), losses = self._receive_off_policy(env_steps)
        else:
            (unroll, lag, waited), losses = self._call(self.receive), None
        thread, broken, waited = int(unroll.thread), bool(unroll.broken), float(waited)
        steps = self.unroll_length * self.context.envs[thread].batch_size
        if broken:
            losses = self._drop_broken(unroll, thread)
        elif losses is None:
            losses = self._train_on_policy(unroll, int(lag))
        total = time.perf_counter() - t0
        metrics = {**self.queues.fill_levels(), **self._stage_rates(steps), "async/policy_lag": float(lag),
                   "async/stale_unrolls": float(self.stale_unrolls), "async/wait_for_unroll": waited,
                   "train/dropped_unrolls": float(self.dropped_unrolls),
                   "train/env_restarts": float(sum(getattr(e, "restarts", 0) for e in self.context.envs))}
        return Iteration(unroll.experience, losses, waited, total - waited, steps, metrics, dropped=broken)

    def _stage_rates(self, consumed: int) -> dict:
        """Throughput of each stage since the previous iteration (counters read without locks)."""
        now, collected, calls, rows = counts = self._counts()
        last_time, last_collected, last_calls, last_rows = self._last_counts
        self._last_counts = counts
        dt = max(now - last_time, 1e-9)
        rates = {"async/env_steps_per_sec_collected": (collected - last_collected) / dt,
                 "async/env_steps_per_sec_learned": consumed / dt}
        if self.actors:  # none when env threads act themselves
            rates["async/actor_calls_per_sec"] = (calls - last_calls) / dt
            rates["async/actor_rows_per_call"] = (rows - last_rows) / max(calls - last_calls, 1)
        return rates

    def _counts(self) -> tuple:
        """``(time, env steps collected, actor calls, actor rows)`` so far."""
        return (time.perf_counter(), sum(t.env_steps for t in self.env_threads),
                sum(a.calls for a in self.actors), sum(a.rows for a in self.actors))

    def _call(self, function: Any, *args: Any) -> Any:
        """One learner graph call that dequeues an unroll; a closed queue re-raises the worker's error."""
        self.coordinator.check()
        try:
            return function(self.queues.learner.handle, *args)
        except QUEUE_CLOSED:
            self.coordinator.check()  # a worker failed and closed the queues: its error, not ours
            raise WorkerError("the learner queue was closed while training: the run was stopped") from None

    def _next_unroll(self) -> Unroll:
        """Only the next unroll, stored nowhere (for benchmarks of collection alone)."""
        return self._call(self.receive)[0]

    def _receive_unroll(self, handle: Any) -> tuple:
        """``(unroll, policy lag, seconds waited)``: the next unroll from whichever env thread finished first."""
        before = tf.timestamp()
        with tf.control_dependencies([before]):
            unroll = self.queues.learner.view(handle).dequeue(([self.unroll_length + 1, None], [], [], []))
        waited = tf.timestamp() - before
        return unroll, self.policy_version - unroll.version, waited

    def _drop_broken(self, unroll: Unroll, thread: int) -> dict:
        """Its environment was recreated mid-unroll: nothing was stored or trained from it; cut the thread's
        stored episodes so that no replayed transition joins rows from before the crash to rows after it."""
        self.dropped_unrolls += 1
        if self.replay is not None and bool(self.first_row_stored[thread]):
            self.schedule.dropped(unroll.experience.env_id[0])
            self.first_row_stored.scatter_nd_update([[thread]], [False])  # its next unroll is stored whole
        return {}

    def _train_on_policy(self, unroll: Unroll, lag: int) -> dict:
        if not self.schedule.fresh(lag):  # collected by too old a policy: an on-policy update would be biased
            self.stale_unrolls += 1
            return {}
        losses = self.learner.train(unroll.experience)
        self.policy_version.assign_add(1)
        return losses

    # -- off-policy: one graph call per iteration ------------------------------------
    def _receive_off_policy(self, env_steps: int) -> tuple:
        """Store the next unroll and, after warm-up, train from replay: one graph call, since on two
        cores every eager op between calls (a dequeue, an ``ensure_shape`` per leaf) slowed the learner."""
        warming_up = self.schedule.warming_up(env_steps)
        if warming_up != self._collecting_at_random:
            self.random_actions.assign(warming_up)
            self._collecting_at_random = warming_up
        if warming_up or not self.schedule.replay_ready():  # whether replay could be sampled before this unroll
            return self._call(self.receive_and_store), {}
        received, trained, losses = self._call(self.receive_and_train)
        return received, losses if bool(trained) else {}

    def _receive_and_store(self, handle: Any) -> tuple:
        unroll, lag, waited = self._receive_unroll(handle)
        stored = tf.cond(unroll.broken, lambda: tf.constant(False), lambda: self._store(unroll))
        with tf.control_dependencies([stored]):
            return tf.nest.map_structure(tf.identity, (unroll, lag, waited))

    def _receive_and_train(self, handle: Any) -> tuple:
        """Store, then ``num_updates_per_iteration`` updates (0: one per env step of the unroll)."""
        unroll, lag, waited = self._receive_and_store(handle)
        trained = tf.logical_not(unroll.broken)  # a broken unroll trains nothing, as in sync
        num_updates = tf.where(trained, self.schedule.updates(
            self.unroll_length * tf.shape(unroll.experience.step_type)[1]), 0)
        # no tf.cond around the updates: a mirrored learner (train.learner_devices) cannot run in a branch
        losses = self.learner.train_from_replay(num_updates)
        with tf.control_dependencies(tf.nest.flatten(losses)):
            bumped = self.policy_version.assign_add(tf.cast(trained, tf.int64))
        with tf.control_dependencies([bumped]):
            return (unroll, lag, waited), tf.identity(trained), tf.nest.map_structure(tf.identity, losses)

    def _store(self, unroll: Unroll) -> Any:
        """Rows in time order, flattened; row 0 only the first time (later it repeats a stored row)."""
        begin = tf.where(self.first_row_stored[unroll.thread], 1, 0)
        self.learner.store(unroll.experience, begin)
        marked = self.first_row_stored.scatter_nd_update([[unroll.thread]], [True])  # after the read above
        with tf.control_dependencies([marked]):
            return tf.constant(True)
