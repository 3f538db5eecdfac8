"""The ray pipeline (``train.pipeline = "ray"``): env runners as Ray actors, the learner in this process.

No environment is stepped here: each runner (:mod:`rlengine_ray.runner`)
builds its own batched environment and policy copy, and the learner trains
on what comes back (:mod:`rlengine_ray.fleet` keeps the runners going)::

    on-policy:   unrolls = one from each runner (sorted by runner, so env ids keep their columns)
                 train on those at most max_policy_lag versions old; version += 1; publish
    off-policy:  unroll = the next from any runner; store it in replay; after warm-up
                 num_updates_per_iteration updates (0: one per env step); version += 1; publish

The rules (warm-up, updates per unroll, policy lag, dropped unrolls) are those of
:class:`rlengine.learn.schedule.UpdateSchedule`, as in the sync and async pipelines.
``publish`` puts the weights (and the observation transformers' merged
statistics) in Ray's object store once; runners fetch them with their next
request. Checkpoints hold the learner's state as for the other pipelines;
runners start fresh episodes on resume.
"""

from __future__ import annotations

import collections
import sys
import time
from typing import Any

import attrs
import numpy as np
import tensorflow as tf

from rlengine import ActingWeights, ConfigError, Iteration, Pipeline, PipelineContext
from rlengine.errors import WorkerError
from rlengine.learn.schedule import UpdateSchedule
from rlengine_ray.config import RayConfig, runner_layout


@attrs.frozen(kw_only=True)
class RemoteRows:
    """A runner's environment as the episode statistics see it (what ``RowGroups.of`` reads)."""

    env_id: str
    num_envs: int
    copy_ids: list
    row_groups: Any  # None, or one name (or tuple of names) per row
    episode_outcomes: bool


class RayPipeline(Pipeline):
    """What on- and off-policy Ray pipelines share: the connection, the fleet, weights and statistics."""

    config_class = RayConfig

    @classmethod
    def env_layout(cls, train: Any, config: RayConfig, algorithm_class: Any) -> list[tuple[int, int]]:
        runner_layout(train, config, not algorithm_class.off_policy)  # settings that cannot run are refused here
        return []  # the runners build the environments, in their own processes

    @classmethod
    def create(cls, context: PipelineContext, config: RayConfig) -> Pipeline:
        off_policy = UpdateSchedule(context.algorithm).from_replay
        return (OffPolicyRayPipeline if off_policy else OnPolicyRayPipeline)(context, config)

    def __init__(self, context: PipelineContext, config: RayConfig):
        super().__init__(context, config)
        if context.collector_recipe is None:
            raise ConfigError("train.pipeline = 'ray' needs the run's collector recipe to build runners; "
                              "build the run with rlengine.Engine")
        train = context.config.train
        self.schedule = UpdateSchedule(context.algorithm, context.replay, max_policy_lag=config.max_policy_lag)
        self.layout = runner_layout(train, config, not self.schedule.from_replay)
        self.learner, self.chain = context.learner, context.chain
        self.weights = ActingWeights(context.algorithm, context.chain)  # the variables found once, not per version
        self.connection: Any = None
        self.answer_timeout = train.env_step_timeout * train.unroll_length
        self.fleet: Any = None
        self.version = 0
        self.env_restarts = [0] * config.num_runners
        self.dropped_unrolls = self.stale_unrolls = 0

    # -- lifecycle ------------------------------------------------------------------------------------
    def start(self) -> None:
        """Connect to Ray, build every runner, publish the current weights."""
        from rlengine_ray.cluster import RayConnection  # Ray is imported when a run uses it, not when
        from rlengine_ray.fleet import RunnerFleet  # a config that names it is checked (a cost per process)

        self.stop()  # a resumed or restarted pipeline starts with new runners
        self.connection = RayConnection(self.config.address)
        self.connection.connect()
        cfg = self.config
        self.fleet = RunnerFleet(self._start_actor, cfg.num_runners, cfg.max_in_flight_per_runner,
                                 cfg.max_runner_restarts, self.answer_timeout, cfg.start_timeout,
                                 self._check_runner, self._runner_restarted)
        try:
            self._publish()
            self.fleet.start()
        except BaseException:
            self.stop()
            raise

    def row_group_sources(self) -> list:
        """The rows of every runner's environment, as the runners described them when they started."""
        return [RemoteRows(**d["rows"]) for d in (self.fleet.descriptions if self.fleet else []) if d]

    def stop(self) -> None:
        """Kill every runner, then leave Ray (a local Ray this run started shuts down with it)."""
        if self.fleet is not None:
            self.fleet.stop()
            self.fleet = None
        if self.connection is not None:
            self.connection.disconnect()

    def _start_actor(self, r: int) -> Any:
        import ray

        from rlengine_ray.runner import EnvRunner

        cfg, (num_envs, first) = self.config, self.layout[r]
        recipe = self.context.collector_recipe(num_envs, first)
        actor = ray.remote(EnvRunner).options(num_cpus=cfg.num_cpus_per_runner, max_restarts=cfg.max_runner_restarts,
                                              max_task_retries=0)
        return actor.remote(r, recipe, cfg.num_cpus_per_runner, tuple(p for p in sys.path if p))

    def _check_runner(self, description: dict) -> None:
        """A runner whose policy or specs differ from the learner's would train on garbage: refuse it."""
        ours = self.weights.layout()
        theirs = [(tuple(shape), dtype) for shape, dtype in description["variables"]]
        where = f"ray runner {description['runner']} (pid {description['pid']} on {description['host']})"
        if ours != theirs:
            raise WorkerError(f"{where} built a policy with variables {theirs}, the learner's are {ours}: "
                              "install the same plugin versions on every node")
        if description["experience"] != repr(self.context.specs.experience):
            raise WorkerError(f"{where} prepared other specs than the learner: install the same plugin and "
                              "environment versions on every node")

    def _runner_restarted(self, r: int) -> None:
        """Its episodes were cut by the failure (off-policy pipelines cut the stored rows too)."""

    def _publish(self) -> None:
        self.fleet.publish(self.weights.read(), self.version)

    # -- unrolls ------------------------------------------------------------------------------------------
    def _receive(self) -> Any:
        """The next unroll of any runner, its transformer statistics merged into the learner's."""
        unroll = self.fleet.next_unroll()
        if self.weights.has_statistics:
            self.chain.merge_updates(*unroll.statistics)
        self.env_restarts[unroll.runner] = unroll.env_restarts
        return unroll

    def _experience(self, unrolls: list) -> Any:
        """The unrolls side by side, ``[T + 1, sum of B]``, as tensors in the experience's structure."""
        leaves = zip(*(u.experience for u in unrolls))
        flat = [tf.constant(parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)) for parts in leaves]
        return tf.nest.pack_sequence_as(self.context.specs.experience, flat)

    def _steps(self, unrolls: list) -> int:
        return sum(self.context.config.train.unroll_length * self.layout[u.runner][0] for u in unrolls)

    def _metrics(self, lags: list) -> dict:
        fleet = self.fleet
        return {"ray/runner_restarts": float(fleet.total_restarts), "ray/duplicate_unrolls": float(fleet.duplicates),
                "ray/policy_lag": float(np.mean(lags)) if lags else 0.0, "ray/stale_unrolls": float(self.stale_unrolls),
                "train/dropped_unrolls": float(self.dropped_unrolls),
                "train/env_restarts": float(sum(self.env_restarts))}


class OnPolicyRayPipeline(RayPipeline):
    def __init__(self, context: PipelineContext, config: RayConfig):
        super().__init__(context, config)
        self.held: dict = collections.defaultdict(collections.deque)  # answers that came before their round

    def start(self) -> None:
        self.held.clear()
        super().start()
        self.fleet.holding = lambda r: len(self.held[r])  # held answers count as in flight

    def _runner_restarted(self, r: int) -> None:
        self.held[r].clear()  # collected by the life that ended, like its unrolls lost in flight

    def iterate(self, env_steps: int) -> Iteration:
        t0 = time.perf_counter()
        unrolls = self._round()
        t1 = time.perf_counter()
        fresh = [u for u in unrolls if not u.dropped and self.schedule.fresh(self.version - u.version)]
        self.dropped_unrolls += sum(u.dropped for u in unrolls)
        self.stale_unrolls += sum(not u.dropped for u in unrolls) - len(fresh)
        lags = [self.version - u.version for u in fresh]
        losses, trained = {}, None
        if fresh:
            trained = self._experience(fresh)
            losses = self.learner.train(trained)
            self.version += 1
            self._publish()
        # every row collected, for the episode statistics (usually the very rows trained on)
        experience = trained if len(fresh) == len(unrolls) else self._experience(unrolls)
        return Iteration(experience, losses, t1 - t0, time.perf_counter() - t1, self._steps(unrolls),
                         self._metrics(lags), dropped=not fresh)

    def _round(self) -> list:
        """One unroll of each runner, in runner order; a runner restarting meanwhile sits this round out."""
        pending, got = set(range(self.config.num_runners)), []
        for r in sorted(pending):
            if self.held[r]:
                got.append(self.held[r].popleft())
                pending.discard(r)
        while pending and not (got and not any(self.fleet.ready[r] for r in pending)):
            unroll = self._receive()
            if unroll.runner in pending:
                got.append(unroll)
                pending.discard(unroll.runner)
            else:
                self.held[unroll.runner].append(unroll)
        return sorted(got, key=lambda u: u.runner)


class OffPolicyRayPipeline(RayPipeline):
    def __init__(self, context: PipelineContext, config: RayConfig):
        super().__init__(context, config)
        self.first_row_stored = [False] * config.num_runners  # later unrolls of a runner repeat a stored row 0
        self.store = tf.function(self.learner.store, autograph=False)  # rows begin..T, one graph call

    def start(self) -> None:
        self.first_row_stored = [False] * self.config.num_runners
        super().start()

    def _runner_restarted(self, r: int) -> None:
        """Cut the runner's stored episodes: its next unroll begins new ones, stored from row 0."""
        if self.first_row_stored[r]:
            num_envs, first = self.layout[r]
            self.schedule.dropped(tf.range(first, first + num_envs))
            self.first_row_stored[r] = False

    def iterate(self, env_steps: int) -> Iteration:
        warming_up = self.schedule.warming_up(env_steps)
        self.fleet.random_actions = warming_up  # requests sent from now on
        t0 = time.perf_counter()
        unroll = self._receive()
        t1 = time.perf_counter()
        losses, lags, experience = {}, [], self._experience([unroll])
        if unroll.dropped:
            self.dropped_unrolls += 1
            self._runner_restarted(unroll.runner)
        else:
            self.store(experience, tf.constant(1 if self.first_row_stored[unroll.runner] else 0))
            self.first_row_stored[unroll.runner] = True
            if not warming_up and self.schedule.replay_ready():
                losses = self.learner.train_from_replay(
                    tf.constant(self.schedule.updates(self._steps([unroll])), tf.int32))
                lags = [self.version - unroll.version]
                self.version += 1
                self._publish()
        return Iteration(experience, losses, t1 - t0, time.perf_counter() - t1,
                         self._steps([unroll]), self._metrics(lags), dropped=unroll.dropped)
