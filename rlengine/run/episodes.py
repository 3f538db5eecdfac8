"""Finished-episode statistics of the training environments, kept in numpy."""

from __future__ import annotations

from typing import Optional

import numpy as np

from rlengine.api.data import StepType
from rlengine.run.groups import RowGroups


class EpisodeStats:
    """Per-copy running returns, turned into finished-episode statistics (numpy).

    Two readers: ``latest()`` gives the episodes of the current iteration (for
    the iteration hooks), ``pop()`` every episode since the last written
    summary row, so rows written every few iterations still count them all::

        stats.start_iteration(); stats.add(step_type, reward)
        hook_metrics = stats.latest()
        if a row is written: row.update(stats.pop())

    With ``groups`` (:class:`~rlengine.run.groups.RowGroups`: the environment names each row's group, e.g.
    its agent) every episode also counts in its group's ``train/<group>/episode_return``, and with
    outcomes in the win, draw and loss rates; without, nothing more is kept.
    """

    def __init__(self, batch: int, groups: Optional[RowGroups] = None):
        self.returns = np.zeros(batch, np.float64)
        self.lengths = np.zeros(batch, np.int64)
        self.groups = groups
        self.finished_returns: list[float] = []
        self.finished_lengths: list[int] = []
        self.finished_rows: list[int] = []  # with groups only: each finished episode's env id ...
        self.finished_last: list[float] = []  # ... and its last reward
        self._iteration_start = 0  # index into the finished lists where this iteration's episodes begin

    def start_iteration(self) -> None:
        """Episodes finished from now on are the new iteration's ``latest()``."""
        self._iteration_start = len(self.finished_returns)

    def add(self, step_type: np.ndarray, reward: np.ndarray, env_ids: Optional[np.ndarray] = None) -> None:
        """Feed ``[T, B]`` new rows (not the overlapping first row of an unroll).

        ``env_ids`` (``[B]``) says which copies the columns are, for unrolls
        of one env thread among several; by default the columns are copies ``0..B-1``.
        """
        ids = np.arange(step_type.shape[1]) if env_ids is None else np.asarray(env_ids)
        boundary_rows = np.flatnonzero(((step_type == StepType.FIRST) | (step_type == StepType.LAST)).any(axis=1))
        start = 0
        for t in [*boundary_rows, len(step_type)]:
            self._accumulate(ids, reward[start:t])  # no episode starts or ends in these rows
            if t < len(step_type):
                self._add_row(ids, step_type[t], reward[t])
            start = t + 1

    def _accumulate(self, ids: np.ndarray, rewards: np.ndarray) -> None:
        """Rows in which every copy goes on: summed row after row, as :meth:`_add_row` would."""
        if len(rewards):
            returns = self.returns[ids]
            for r in rewards:
                returns += r
            self.returns[ids] = returns
            self.lengths[ids] += len(rewards)

    def _add_row(self, ids: np.ndarray, st: np.ndarray, r: np.ndarray) -> None:
        first, last = ids[st == StepType.FIRST], ids[st == StepType.LAST]
        self.returns[first] = 0.0
        self.lengths[first] = 0
        going = ids[st != StepType.FIRST]
        self.returns[going] += r[st != StepType.FIRST]
        self.lengths[going] += 1
        if len(last):
            self.finished_returns.extend(self.returns[last].tolist())
            self.finished_lengths.extend(self.lengths[last].tolist())
            if self.groups is not None:
                self.finished_rows.extend(last.tolist())
                self.finished_last.extend(r[st == StepType.LAST].tolist())

    def latest(self) -> dict:
        """Statistics of the episodes finished since ``start_iteration()`` (may be empty)."""
        return self._summary(self._iteration_start)

    def pop(self) -> dict:
        """Statistics of the episodes finished since the last call (may be empty)."""
        out = self._summary(0)
        self.finished_returns, self.finished_lengths, self.finished_rows, self.finished_last = [], [], [], []
        self._iteration_start = 0
        return out

    def _summary(self, start: int) -> dict:
        out = _summary(self.finished_returns[start:], self.finished_lengths[start:])
        if self.groups is not None and out:
            out.update(self.groups.metrics("train", "episode_return", np.array(self.finished_returns[start:]),
                                           np.array(self.finished_rows[start:], np.int64),
                                           np.array(self.finished_last[start:])))
        return out


def _summary(returns: list, lengths: list) -> dict:
    if not returns:
        return {}
    return {
        "train/episode_return": float(np.mean(returns)),
        "train/episode_length": float(np.mean(lengths)),
        "train/episodes": float(len(returns)),
    }
