"""The asynchronous pipeline: env threads and actor threads collect while the learner trains.

Same contract as the synchronous pipelines (``start() -> carry``,
``iterate(carry, env_steps) -> Iteration``), plus ``stop()``. One iteration
takes one unroll off the learner queue, from whichever env thread finished
first::

    unroll = learner_queue.dequeue()           # [T + 1, B_i] rows of env thread i
    off-policy:  replay.add(unroll); updates from replay (none while warming up)
    on-policy:   drop it if older than max_policy_lag versions, else train on it
    policy_version += 1                        # after every trained unroll

Actors read the variables the learner writes (no copies); each unroll
carries the policy version that started it, so the learner reports the lag.
"""

from __future__ import annotations

import time
from typing import Any

import tensorflow as tf

from rlengine.async_driver import ActorThread, EnvThread
from rlengine.coordinator import QUEUE_CLOSED, Coordinator
from rlengine.errors import ConfigError, WorkerError
from rlengine.faults import EnvironmentFault, EnvironmentTimeout
from rlengine.interfaces import Algorithm
from rlengine.learner import Learner
from rlengine.pipelines import Iteration
from rlengine.queues import RunQueues, Unroll

WATCH_INTERVAL = 0.5  # seconds between the watchdog's looks at the in-process environments


class AsyncPipeline:
    """Owns the queues, the threads and their coordinator for one run."""

    def __init__(self, envs: list, chain: Any, algorithm: Algorithm, specs: Any, converters: Any,
                 learner: Learner, buffer: Any, cfg: Any, async_cfg: Any):
        self.envs, self.algorithm, self.learner, self.buffer = envs, algorithm, learner, buffer
        self.unroll_length = cfg.unroll_length
        self.max_policy_lag = async_cfg.max_policy_lag
        num_actors = async_cfg.num_actor_threads
        served = [[i for i in range(len(envs)) if i % num_actors == a] for a in range(num_actors)]
        capacity = async_cfg.actor_queue_capacity or max(len(s) for s in served)
        self._new_queues = lambda: RunQueues(specs, [e.batch_size for e in envs], num_actors, capacity,
                                             async_cfg.learner_queue_capacity)
        self.queues = self._new_queues()  # replaced at each start: closed queues cannot reopen
        self.coordinator = Coordinator(self.queues.close_all)
        self.random_actions = tf.Variable(bool(algorithm.off_policy and algorithm.initial_collect_steps),
                                          trainable=False, name="random_actions")
        self.policy_version = tf.Variable(0, dtype=tf.int64, trainable=False, name="policy_version")
        self.env_threads = [EnvThread(i, env, chain, algorithm, specs, self.queues, i % num_actors,
                                      cfg.unroll_length) for i, env in enumerate(envs)]
        self.actors = [ActorThread(a, algorithm, converters, specs, self.queues, served[a], self.random_actions,
                                   self.policy_version) for a in range(num_actors)]
        self.store = tf.function(self._store, autograph=False)
        self.started_threads: set = set()  # env threads whose first row is already stored
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
        for actor in self.actors:
            self.coordinator.start(f"actor thread {actor.index}", self._runner(actor), actor.describe)
        for thread in self.env_threads:
            self.coordinator.start(f"env thread {thread.index}", self._runner(thread), thread.describe)
        watched = [t for t in self.env_threads if getattr(t.env, "needs_watcher", False)]
        if watched:
            self.coordinator.start("env watchdog", lambda: self._watch(watched, self.coordinator))
        self.started = True
        self._last_counts = (time.perf_counter(), sum(t.env_steps for t in self.env_threads),
                             sum(a.calls for a in self.actors), sum(a.rows for a in self.actors))

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

    def stop(self) -> list:
        """Close the queues and join every thread; the names of threads that did not stop in time."""
        return self.coordinator.stop() if self.started else []

    # -- one iteration -------------------------------------------------------------
    def iterate(self, carry: Any, env_steps: int) -> Iteration:
        t0 = time.perf_counter()
        unroll = self._next_unroll()
        t1 = time.perf_counter()
        thread = int(unroll.thread)
        lag = int(self.policy_version.numpy() - unroll.version.numpy())
        steps = self.unroll_length * self.envs[thread].batch_size
        broken = bool(unroll.broken)
        if broken:
            losses = self._drop_broken(unroll, thread)
        elif self.algorithm.off_policy:
            losses = self._train_off_policy(unroll, thread, env_steps + steps)
        else:
            losses = self._train_on_policy(unroll, lag)
        metrics = {**self.queues.fill_levels(), **self._stage_rates(steps), "async/policy_lag": float(lag),
                   "async/stale_unrolls": float(self.stale_unrolls), "async/wait_for_unroll": t1 - t0,
                   "train/dropped_unrolls": float(self.dropped_unrolls),
                   "train/env_restarts": float(sum(getattr(e, "restarts", 0) for e in self.envs))}
        return Iteration(unroll.experience, None, losses, t1 - t0, time.perf_counter() - t1, steps, metrics,
                         dropped=broken)

    def _stage_rates(self, consumed: int) -> dict:
        """Throughput of each stage since the previous iteration (counters read without locks)."""
        now = time.perf_counter()
        collected = sum(t.env_steps for t in self.env_threads)
        calls, rows = sum(a.calls for a in self.actors), sum(a.rows for a in self.actors)
        last_time, last_collected, last_calls, last_rows = self._last_counts
        self._last_counts = (now, collected, calls, rows)
        dt = max(now - last_time, 1e-9)
        return {"async/env_steps_per_sec_collected": (collected - last_collected) / dt,
                "async/env_steps_per_sec_learned": consumed / dt,
                "async/actor_calls_per_sec": (calls - last_calls) / dt,
                "async/actor_rows_per_call": (rows - last_rows) / max(calls - last_calls, 1)}

    def _next_unroll(self) -> Unroll:
        self.coordinator.check()
        try:
            return self.queues.learner.dequeue((self._unroll_outer, [], [], []))
        except QUEUE_CLOSED:
            self.coordinator.check()  # a worker failed and closed the queues: its error, not ours
            raise WorkerError("the learner queue was closed while training: the run was stopped") from None

    @property
    def _unroll_outer(self) -> list:
        return [self.unroll_length + 1, None]

    def _drop_broken(self, unroll: Unroll, thread: int) -> dict:
        """Its environment was recreated mid-unroll: train nothing on it, and cut the thread's stored
        episodes so that no replayed transition joins rows from before the crash to rows after it."""
        self.dropped_unrolls += 1
        if self.buffer is not None and thread in self.started_threads:
            self.buffer.mark_newest_rows_last(unroll.experience.env_id[0])
            self.started_threads.discard(thread)  # its next unroll is stored whole, from its first row
        return {}

    def _train_on_policy(self, unroll: Unroll, lag: int) -> dict:
        if lag > self.max_policy_lag:  # collected by too old a policy: an on-policy update would be biased
            self.stale_unrolls += 1
            return {}
        losses = self.learner.train(unroll.experience)
        self.policy_version.assign_add(1)
        return losses

    def _train_off_policy(self, unroll: Unroll, thread: int, env_steps: int) -> dict:
        first = thread not in self.started_threads
        self.started_threads.add(thread)
        self.store(unroll.experience, first)
        warming_up = env_steps < self.algorithm.initial_collect_steps
        self.random_actions.assign(warming_up)
        if warming_up or not bool(self.buffer.can_sample()):
            return {}
        num_updates = self.algorithm.num_updates_per_iteration or self.unroll_length * self.envs[thread].batch_size
        losses = self.learner.train_from_replay(tf.constant(num_updates))
        self.policy_version.assign_add(1)
        return losses

    def _store(self, experience: Any, include_first_row: bool) -> None:
        """Rows in time order, flattened; row 0 only the first time (later it repeats a stored row)."""
        rows = experience if include_first_row else tf.nest.map_structure(lambda x: x[1:], experience)
        self.buffer.add(tf.nest.map_structure(lambda x: tf.reshape(x, [-1, *x.shape[2:]]), rows))


def thread_layout(cfg: Any, async_cfg: Any, on_policy: bool) -> list[tuple[int, int]]:
    """``(batch_size, first_env_id)`` of each env thread, after checking the settings can run.

    Every copy of the run gets a unique env id in ``0..num_envs-1`` (the
    replay buffer keeps one ring per id), and no setting may leave a thread
    waiting forever or an on-policy learner dropping everything.
    """
    threads = async_cfg.num_env_threads
    sizes = list(async_cfg.env_batch_sizes) or _even_split(cfg.num_envs, threads)
    if len(sizes) != threads or sum(sizes) != cfg.num_envs or min(sizes) < 1:
        raise ConfigError(f"async.env_batch_sizes = {sizes} must have async.num_env_threads = {threads} "
                          f"positive entries summing to train.num_envs = {cfg.num_envs}")
    firsts = list(async_cfg.first_env_ids) or [sum(sizes[:i]) for i in range(threads)]
    ids = sorted(i for first, size in zip(firsts, sizes) for i in range(first, first + size))
    if len(firsts) != threads or ids != list(range(cfg.num_envs)):
        raise ConfigError(f"async.first_env_ids = {firsts} must give each of the {threads} env threads its own "
                          f"ids so that together they number the copies 0..{cfg.num_envs - 1} once each; "
                          "leave it empty for consecutive ids")
    if async_cfg.num_actor_threads > threads:
        raise ConfigError(f"async.num_actor_threads = {async_cfg.num_actor_threads} exceeds async.num_env_threads "
                          f"= {threads}: an actor would serve no env thread; lower it")
    if on_policy and async_cfg.max_policy_lag < threads + async_cfg.learner_queue_capacity - 1:
        raise ConfigError(
            f"async.max_policy_lag = {async_cfg.max_policy_lag} is below num_env_threads + learner_queue_capacity - 1"
            f" = {threads + async_cfg.learner_queue_capacity - 1}, the lag unrolls reach while they wait their "
            "turn, so most would be dropped; raise it or lower async.learner_queue_capacity")
    return list(zip(sizes, firsts))


def _even_split(num_envs: int, threads: int) -> list:
    if num_envs % threads:
        raise ConfigError(f"train.num_envs = {num_envs} does not split evenly over async.num_env_threads = "
                          f"{threads}; change one, or give async.env_batch_sizes")
    return [num_envs // threads] * threads
