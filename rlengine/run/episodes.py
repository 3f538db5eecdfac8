"""Finished-episode statistics of the training environments, kept in numpy."""

from __future__ import annotations

from typing import Optional

import numpy as np

from rlengine.api.data import StepType


class EpisodeStats:
    """Per-copy running returns, turned into finished-episode statistics (numpy)."""

    def __init__(self, batch: int):
        self.returns = np.zeros(batch, np.float64)
        self.lengths = np.zeros(batch, np.int64)
        self.finished_returns: list[float] = []
        self.finished_lengths: list[int] = []

    def add(self, step_type: np.ndarray, reward: np.ndarray, env_ids: Optional[np.ndarray] = None) -> None:
        """Feed ``[T, B]`` new rows (not the overlapping first row of an unroll).

        ``env_ids`` (``[B]``) says which copies the columns are, for unrolls
        of one env thread among several; by default the columns are copies ``0..B-1``.
        """
        ids = np.arange(step_type.shape[1]) if env_ids is None else np.asarray(env_ids)
        for st, r in zip(step_type, reward):
            first, last = ids[st == StepType.FIRST], ids[st == StepType.LAST]
            self.returns[first] = 0.0
            self.lengths[first] = 0
            going = ids[st != StepType.FIRST]
            self.returns[going] += r[st != StepType.FIRST]
            self.lengths[going] += 1
            if len(last):
                self.finished_returns.extend(self.returns[last].tolist())
                self.finished_lengths.extend(self.lengths[last].tolist())

    def pop(self) -> dict:
        """Statistics of the episodes finished since the last call (may be empty)."""
        if not self.finished_returns:
            return {}
        out = {
            "train/episode_return": float(np.mean(self.finished_returns)),
            "train/episode_length": float(np.mean(self.finished_lengths)),
            "train/episodes": float(len(self.finished_returns)),
        }
        self.finished_returns, self.finished_lengths = [], []
        return out
