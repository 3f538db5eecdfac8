"""The two synchronous pipelines: what one training iteration does.

Both expose ``start() -> carry`` and ``iterate(carry, env_steps) ->
Iteration``; the trainer loop does not care which one it drives.

* On-policy: one unroll, then every epoch of updates on it.
* On-policy through replay (``train.replay_on_policy``): the unroll goes
  into a replay buffer sized for one unroll, the learner replays all of it,
  and the buffer is cleared; the same learner code as the direct path.
* Off-policy: one unroll stored into the replay buffer, then
  ``num_updates_per_iteration`` updates on sampled sequences. The first
  ``initial_collect_steps`` env steps use uniformly random actions and train
  nothing.
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple, Optional

import tensorflow as tf

from rlengine.driver import Carry, SyncDriver
from rlengine.faults import FaultWatch
from rlengine.interfaces import Algorithm
from rlengine.learner import Learner


class Iteration(NamedTuple):
    experience: Any  # the unroll's rows [T + 1, B]; row 0 repeats the previous unroll's last row
    carry: Optional[Carry]  # None from the async pipeline, which carries nothing between iterations
    losses: dict  # averaged loss scalars (empty while nothing is trained)
    collect_seconds: float
    update_seconds: float
    env_steps: int = 0  # env steps this iteration collected (0: unroll_length x num_envs)
    metrics: dict = {}  # pipeline-specific summaries (e.g. async/policy_lag); never mutated
    dropped: bool = False  # the env restarted during the unroll: it was neither stored nor trained


def rows_to_store(experience: Any, begin: Any = 1) -> Any:
    """Rows ``begin..T`` of a ``[T + 1, B]`` unroll in time order, flattened to ``[N]``: one replay add
    (one sum-tree update) per unroll. Row 0 repeats the previous unroll's last row, so usually begin = 1."""
    return tf.nest.map_structure(lambda x: tf.reshape(x[begin:], [-1, *x.shape[2:]]), experience)


class OnPolicyPipeline:
    def __init__(self, driver: SyncDriver, learner: Learner):
        self.driver, self.learner = driver, learner
        self.faults = FaultWatch(driver.env.env)  # env timeout, restarts, dropped unrolls

    def start(self) -> Carry:
        return self.faults.call(self.driver.start)

    def iterate(self, carry: Carry, env_steps: int) -> Iteration:
        t0 = time.perf_counter()
        (experience, carry), dropped = self.faults.run(self.driver.run, carry)
        t1 = time.perf_counter()
        losses = {} if dropped else self.learner.train(experience)  # the carry goes on from the fresh env
        return Iteration(experience, carry, losses, t1 - t0, time.perf_counter() - t1,
                         metrics=self.faults.metrics(), dropped=dropped)


class ReplayAllPipeline(OnPolicyPipeline):
    """On-policy training that routes each unroll through a replay buffer."""

    def __init__(self, driver: SyncDriver, learner: Learner, buffer: Any):
        super().__init__(driver, learner)
        self.buffer = buffer
        self.collect = tf.function(self._collect, autograph=False)

    def _collect(self, carry: Carry) -> tuple:
        experience, carry = self.driver._run(carry)
        self.buffer.add(tf.nest.map_structure(lambda x: tf.reshape(x, [-1, *x.shape[2:]]), experience))
        replayed = tf.nest.map_structure(lambda x: tf.transpose(x, [1, 0, *range(2, len(x.shape))]),
                                         self.buffer.gather_all())  # [T + 1, B] again
        self.buffer.clear()
        return experience, replayed, carry

    def iterate(self, carry: Carry, env_steps: int) -> Iteration:
        t0 = time.perf_counter()
        (experience, replayed, carry), dropped = self.faults.run(self.collect, carry)
        t1 = time.perf_counter()
        losses = {} if dropped else self.learner.train(replayed)  # the buffer is already cleared
        return Iteration(experience, carry, losses, t1 - t0, time.perf_counter() - t1,
                         metrics=self.faults.metrics(), dropped=dropped)


class OffPolicyPipeline:
    def __init__(self, driver: SyncDriver, learner: Learner, buffer: Any, algorithm: Algorithm):
        self.driver, self.learner, self.buffer, self.algorithm = driver, learner, buffer, algorithm
        self.store = tf.function(self._store, autograph=False)
        self.faults = FaultWatch(driver.env.env)  # env timeout, restarts, dropped unrolls
        steps = driver.unroll_length * driver.batch
        self.num_updates = tf.constant(algorithm.num_updates_per_iteration or steps)  # 0: one per env step

    def start(self) -> Carry:
        carry = self.faults.call(self.driver.start)
        self.buffer.add(carry.experience)  # the first row; later unrolls store rows 1..T
        return carry

    def _store(self, experience: Any) -> None:
        self.buffer.add(rows_to_store(experience))

    def iterate(self, carry: Carry, env_steps: int) -> Iteration:
        warming_up = env_steps < self.algorithm.initial_collect_steps
        self.driver.random_actions.assign(warming_up)
        t0 = time.perf_counter()
        (experience, carry), dropped = self.faults.run(self.driver.run, carry)
        if dropped:  # cut the stored episodes where the crash began; restart from FIRST rows
            self.buffer.mark_newest_rows_last()
            carry = self.start()
        else:
            self.store(experience)
        t1 = time.perf_counter()
        losses = {} if warming_up or dropped else self.learner.train_from_replay(self.num_updates)
        return Iteration(experience, carry, losses, t1 - t0, time.perf_counter() - t1,
                         metrics=self.faults.metrics(), dropped=dropped)
