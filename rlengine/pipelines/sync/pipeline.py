"""The synchronous pipeline (``train.pipeline = "sync"``): collect, then train, in turn.

:meth:`SyncPipeline.create` picks one of three for the algorithm:

* On-policy: one unroll, then every epoch of updates on it.
* On-policy through replay (``train.replay_on_policy``): the unroll goes
  into a replay buffer sized for one unroll, the learner replays all of it,
  and the buffer is cleared; the same learner code as the direct path.
* Off-policy: one unroll stored into the replay buffer, then
  ``num_updates_per_iteration`` updates on sampled sequences (0: one per env
  step, ``unroll_length x num_envs``). The first
  ``initial_collect_steps`` env steps use uniformly random actions and train
  nothing.

Only this pipeline pins down where its environment stands between
iterations, so only its checkpoints let episodes continue on resume
(:meth:`save_state`: the environment's own state and the collector's carry).
"""

from __future__ import annotations

import io
import time
from typing import Any

import numpy as np
import tensorflow as tf

from rlengine.api.pipeline import Iteration, Pipeline, PipelineContext
from rlengine.api.placement import actor_device
from rlengine.collect import env_state as env_state_lib
from rlengine.collect.env_checks import leaf_problem
from rlengine.collect.faults import FaultWatch
from rlengine.collect.fixed_signature import FixedSignatureFunction
from rlengine.collect.unroll import Carry
from rlengine.learn.replay.buffer import ReplayBuffer, kept_in_replay
from rlengine.learn.schedule import UpdateSchedule
from rlengine.pipelines.sync.clock import GraphClock
from rlengine.pipelines.sync.collector import Collector


class SyncPipeline(Pipeline):
    """One batched environment, collected and trained in turn; the carry goes from unroll to unroll."""

    @classmethod
    def create(cls, context: PipelineContext, config: Any) -> Pipeline:
        if UpdateSchedule(context.algorithm).from_replay:
            return OffPolicyPipeline(context, config)
        if context.config.train.replay_on_policy:
            return ReplayAllPipeline(context, config)
        return OnPolicyPipeline(context, config)

    def __init__(self, context: PipelineContext, config: Any):
        super().__init__(context, config)
        train = context.config.train
        self.collector = Collector(context.envs[0], context.chain, context.algorithm, context.specs,
                                   context.converters, train.unroll_length, actor_device(train), train.jit_compile_unroll)
        self.learner = context.learner
        self.faults = FaultWatch(self.collector.env.env)  # env timeout, restarts, dropped unrolls
        self.clock = GraphClock(train.deterministic)
        self.carry: Any = None

    def start(self) -> None:
        self.carry = self.faults.call(self.collector.start)

    def stop(self) -> None:
        self.faults.close()  # its watcher thread, so in-process runs one after another leave none behind

    def _collect(self, function: Any) -> tuple:
        """``(outputs of function(carry), dropped)``; the carry goes on from a recreated env if dropped."""
        return self.faults.run(function, self.carry)

    def _timed_in_graph(self, function: Any) -> tuple:
        """``(outputs, collect seconds, update seconds, dropped)`` of one graph call ``function(carry)`` whose
        last output is the clock when its collection ended (:class:`GraphClock`)."""
        t0 = self.clock.now()
        (*outputs, collected), dropped = self._collect(function)
        seconds, collect_seconds = self.clock.now() - t0, float(collected.numpy()) - t0
        return outputs, collect_seconds, seconds - collect_seconds, dropped

    def _iteration(self, experience: Any, losses: dict, t0: float, t1: float, dropped: bool) -> Iteration:
        return Iteration(experience, losses, t1 - t0, time.perf_counter() - t1, metrics=self.faults.metrics(),
                         dropped=dropped)

    # -- checkpoints: the environment's own state and the carry, as arrays (no pickle), signed ------
    def save_state(self) -> bytes:
        """The env's state and the carry, signed by this user (see :mod:`rlengine.collect.env_state`);
        b"" when the env cannot save its state or it is above ``train.max_env_state_bytes``."""
        env_state = b""  # a graph environment's state is part of the carry
        if self.collector.env.calls_python:
            env_state = env_state_lib.bounded_state(self.context.envs[0], self.context.config.train.max_env_state_bytes)
            if not env_state:  # its episodes restart on resume, so the carry would be of no use
                return b""
        arrays = [np.frombuffer(env_state, np.uint8), *[t.numpy() for t in tf.nest.flatten(self.carry)]]
        buffer = io.BytesIO()
        np.savez(buffer, *arrays)
        return env_state_lib.signed(buffer.getvalue())

    def resume(self, state: bytes) -> bool:
        """Continue the saved episodes when this user wrote ``state`` and the env restores it; else restart."""
        arrays = _load_arrays(env_state_lib.trusted(state))  # unsigned or foreign: never unpickled
        batch, ctx = self.collector.batch, self.context
        template = Carry(ctx.specs.experience, ctx.chain.initial_state(batch), ctx.algorithm.initial_state(batch),
                         self.collector.env.state_spec())
        if arrays and not _carry_fits(arrays[1:], template, batch):
            env_state_lib.refuse("its last collected row has another layout than this run's experience (the "
                                 "algorithm's rollout info, the policy state or the transformers changed since)")
            arrays = []
        if not arrays or (self.collector.env.calls_python
                          and not env_state_lib.apply_trusted_state(ctx.envs[0], arrays[0].tobytes())):
            return super().resume(b"")
        self.carry = tf.nest.pack_sequence_as(template, [tf.constant(a) for a in arrays[1:]])
        return True


class OnPolicyPipeline(SyncPipeline):
    """One unroll, then every epoch of updates on it.

    With a graph environment both are one graph call (collection, advantages, every epoch's
    minibatches), so an iteration crosses into Python once, to hand back its summaries.
    """

    def __init__(self, context: PipelineContext, config: Any):
        super().__init__(context, config)
        self.iterate_in_graph = None if self.collector.env.calls_python else FixedSignatureFunction(
            self._collect_and_train)

    def _collect_and_train(self, carry: Carry) -> tuple:
        """``(experience, carry, losses, the clock when the collection ended)`` of one iteration."""
        experience, carry = self.collector._run(carry)
        with tf.control_dependencies(tf.nest.flatten(experience)):
            collected = self.clock.in_graph()
        return experience, carry, self.learner._train(experience), collected

    def iterate(self, env_steps: int) -> Iteration:
        if self.iterate_in_graph is not None:  # a graph environment is never dropped
            (experience, self.carry, losses), collect_seconds, update_seconds, _ = self._timed_in_graph(
                self.iterate_in_graph)
            return Iteration(experience, losses, collect_seconds, update_seconds, metrics=self.faults.metrics())
        t0 = time.perf_counter()
        (experience, self.carry), dropped = self._collect(self.collector.run)
        t1 = time.perf_counter()
        losses = {} if dropped else self.learner.train(experience)
        return self._iteration(experience, losses, t0, t1, dropped)


class ReplayAllPipeline(SyncPipeline):
    """On-policy training that routes each unroll through a replay buffer."""

    def __init__(self, context: PipelineContext, config: Any):
        super().__init__(context, config)
        train = context.config.train  # room for exactly one unroll of T + 1 rows per copy
        self.replay = ReplayBuffer(context.specs.experience, train.num_envs,
                                   train.num_envs * (train.unroll_length + 1), sequence_length=1)
        self.collect = FixedSignatureFunction(self._collect_and_replay)

    def _collect_and_replay(self, carry: Carry) -> tuple:
        experience, carry = self.collector._run(carry)
        self.replay.add(tf.nest.map_structure(lambda x: tf.reshape(x, [-1, *x.shape[2:]]), experience))
        replayed = tf.nest.map_structure(lambda x: tf.transpose(x, [1, 0, *range(2, len(x.shape))]),
                                         self.replay.gather_all())  # [T + 1, B] again
        self.replay.clear()
        return experience, replayed, carry

    def iterate(self, env_steps: int) -> Iteration:
        t0 = time.perf_counter()
        (experience, replayed, self.carry), dropped = self._collect(self.collect)
        t1 = time.perf_counter()
        losses = {} if dropped else self.learner.train(replayed)  # the buffer is already cleared
        return self._iteration(experience, losses, t0, t1, dropped)


class OffPolicyPipeline(SyncPipeline):
    """Collect, store and train in one graph call per iteration.

    A ``tf.function`` call costs about as much as a SAC update (docs/performance.md);
    an iteration of a few env steps made three (collect, store, train) plus
    eager ops between them. Now it is one (``benchmarks/offpolicy_iteration.py``
    times it)::

        restarts = env restarts so far                 # Python, from the graph
        experience, carry = unroll(carry)              # random actions while warming up
        kept = env restarts == restarts                # a restart mid-unroll drops the unroll
        if kept: store rows 1..T of experience in replay
        losses = num_updates (0 while warming up or dropped) updates from replay
    """

    def __init__(self, context: PipelineContext, config: Any):
        super().__init__(context, config)
        self.replay, self.algorithm = context.replay, context.algorithm
        self.schedule = UpdateSchedule(self.algorithm, self.replay)
        self.num_updates = tf.constant(self.schedule.updates(self.collector.unroll_length * self.collector.batch))
        self.warming_up = {flag: tf.constant(flag) for flag in (False, True)}  # no new tensor per iteration
        self.iterate_in_graph = FixedSignatureFunction(self._iterate_in_graph)
        self._env = self.collector.env.env

    def start(self) -> None:
        super().start()
        self.replay.add(kept_in_replay(self.carry.experience, self.algorithm))  # the first row; later: rows 1..T

    def _restarts(self) -> Any:
        """How often the (fault-guarded) environment has been recreated, read when the graph runs (a graph
        environment is never recreated, and reading it would cost a call into Python)."""
        if not self.collector.env.calls_python:
            return tf.constant(0, tf.int64)
        return tf.numpy_function(lambda: np.int64(getattr(self._env, "restarts", 0)), [], tf.int64, stateful=True)

    def _iterate_in_graph(self, carry: Carry, warming_up: Any, num_updates: Any) -> tuple:
        """``(experience, carry, losses, the clock when the collection ended)`` of one iteration."""
        self.collector.random_actions.assign(warming_up)
        before = self._restarts()
        # the restart count is read before the unroll steps the env and after it, ordered explicitly: the
        # graph did not order the reads around the unroll's loop by itself (a dropped unroll was stored)
        with tf.control_dependencies([before]):
            carry = tf.nest.map_structure(tf.identity, carry)
        experience, carry = self.collector._run(carry)
        with tf.control_dependencies(tf.nest.flatten(experience)):
            kept = tf.equal(self._restarts(), before)
            collected = self.clock.in_graph()

        def store() -> Any:
            self.learner.store(experience)
            return tf.constant(True)

        stored = tf.cond(kept, store, lambda: tf.constant(False))
        with tf.control_dependencies([stored]):
            updates = tf.where(kept & tf.logical_not(warming_up), num_updates, 0)
        return experience, carry, self.learner._train_from_replay(updates), collected

    def iterate(self, env_steps: int) -> Iteration:
        warming_up = self.schedule.warming_up(env_steps)
        (experience, carry, losses), collect_seconds, update_seconds, dropped = self._timed_in_graph(
            lambda c: self.iterate_in_graph(c, self.warming_up[warming_up], self.num_updates))
        if dropped:  # nothing stored or trained; cut the stored episodes where the crash began, restart from FIRST
            self.schedule.dropped()
            self.start()
        else:
            self.carry = carry
        return Iteration(experience, {} if warming_up or dropped else losses, collect_seconds, update_seconds,
                         metrics=self.faults.metrics(), dropped=dropped)


def _carry_fits(arrays: list, template: Carry, batch: int) -> bool:
    """Whether saved ``arrays`` have the shapes and dtypes of ``template``'s leaves (specs of one row, or tensors)."""
    leaves = tf.nest.flatten(template)
    return len(arrays) == len(leaves) and not any(
        leaf_problem(array, (batch, *leaf.shape) if isinstance(leaf, tf.TensorSpec) else tuple(leaf.shape),
                     np.dtype(leaf.dtype.as_numpy_dtype))
        for array, leaf in zip(arrays, leaves))


def _load_arrays(data: bytes) -> list:
    if not data:
        return []
    with np.load(io.BytesIO(data), allow_pickle=False) as files:  # no pickle: loading it runs no code
        return [files[f"arr_{i}"] for i in range(len(files.files))]
