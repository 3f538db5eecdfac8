"""When a pipeline updates, and how often: one schedule for the sync, async and Ray pipelines alike.

The pipelines differ in where their unrolls come from (one batched environment, env threads,
Ray runners), not in what they do with one. Each holds an :class:`UpdateSchedule` and asks it,
unroll by unroll::

    schedule = UpdateSchedule(algorithm, replay, max_policy_lag=...)  # no lag limit: None
    at random = schedule.warming_up(env_steps)     # off-policy: uniformly random actions, no update
    unroll = collect()                             # with its policy lag and whether it was dropped
    if unroll was dropped:                         # its environment was recreated mid-unroll
        schedule.dropped(its env ids)              # nothing stored or trained; its stored episodes cut
    elif schedule.from_replay:                     # off-policy
        store rows 1..T of the unroll (row 0 too, the first time a copy is stored)
        if not at random and schedule.replay_ready():
            learner.train_from_replay(schedule.updates(env steps the unroll collected))
    elif schedule.fresh(lag):                      # on-policy, collected at most max_policy_lag versions ago
        learner.train(unroll)

The sync pipeline stores every copy each iteration, so its warm-up alone makes the replay ready
(the run's build checks ``initial_collect_steps`` against ``num_envs x mini_batch_length``); the
async and Ray pipelines store whichever copies answered first, so they ask :meth:`replay_ready` too.
"""

from __future__ import annotations

from typing import Any, Optional

import tensorflow as tf


class UpdateSchedule:
    """The update rules of one run's algorithm: warm-up, updates per unroll, policy lag, dropped unrolls.

    ``replay``: the run's replay buffer (off-policy), else None. ``max_policy_lag``: how many
    policy versions an on-policy unroll may lag behind the learner (None: any).
    """

    def __init__(self, algorithm: Any, replay: Any = None, max_policy_lag: Optional[int] = None):
        self.algorithm = algorithm
        self.replay = replay
        self.max_policy_lag = max_policy_lag
        self._replay_ready = False

    @property
    def from_replay(self) -> bool:
        """Whether the algorithm learns from replay (off-policy), not from each unroll as it comes."""
        return bool(self.algorithm.off_policy)

    def warming_up(self, env_steps: Any) -> Any:
        """Whether the run, ``env_steps`` into its collection, still collects at random and trains
        nothing: an off-policy algorithm's first ``initial_collect_steps`` env steps (never on-policy).
        A bool for an int; a bool tensor for a tensor (off-policy)."""
        return self.from_replay and env_steps < self.algorithm.initial_collect_steps

    def updates(self, env_steps: Any) -> Any:
        """Updates from replay after an unroll of ``env_steps`` env steps (``unroll_length x`` its copies):
        ``num_updates_per_iteration``, or one per env step when that is 0. An int for an int; an int32
        tensor for a tensor (inside a graph, where the unroll's batch may be known only when it runs)."""
        fixed = self.algorithm.num_updates_per_iteration
        if tf.is_tensor(env_steps):
            return tf.constant(fixed, tf.int32) if fixed else tf.cast(env_steps, tf.int32)
        return int(fixed or env_steps)

    def fresh(self, lag: Any) -> Any:
        """Whether an on-policy unroll ``lag`` policy versions old may still be trained on (at most
        ``max_policy_lag``): an older one would bias the update. A bool tensor for a tensor."""
        return self.max_policy_lag is None or lag <= self.max_policy_lag

    def replay_ready(self) -> bool:
        """Whether the replay can be sampled (a copy holds a whole sequence); once true it stays true
        and is not read again (the buffer's rows only grow)."""
        self._replay_ready = self._replay_ready or bool(self.replay.can_sample())
        return self._replay_ready

    def dropped(self, env_ids: Any = None) -> None:
        """The unroll of copies ``env_ids`` (None: every copy) was dropped, or their environments start
        new episodes: cut their stored episodes at the newest row, so no replayed transition joins the
        rows before to the rows after. Nothing to cut without a replay buffer."""
        if self.replay is not None:
            self.replay.mark_newest_rows_last(env_ids)
