"""Episode statistics per group of rows (e.g. per agent) and win/draw/loss rates.

An environment may declare two optional attributes (read with ``getattr``, so a wrapper that
forwards unknown attributes passes them on; see :class:`~rlengine.api.environment.Environment`):

- ``row_groups``: ``num_envs`` entries, the group each row's episodes are counted in (a multi-agent
  environment's agent of each row), or a tuple of groups where a row's episodes count in several (its
  agent and its opponent, API 1.10). Every episode then also counts in ``<prefix>/<group>/<key>``.
- ``episode_outcomes = True``: the sign of an episode's last reward is its outcome, a win (> 0), a
  draw (0) or a loss (< 0), reported as ``<prefix>/win_rate``, ``draw_rate`` and ``loss_rate`` (and
  per group where there are groups).

Environments that declare neither cost nothing: :meth:`RowGroups.of` returns ``None``.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional

import numpy as np

from rlengine.errors import PluginError

OUTCOMES = (("win_rate", np.greater), ("draw_rate", np.equal), ("loss_rate", np.less))


class RowGroups:
    """Which group each row (by ``env_id``) belongs to, and whether episodes have outcomes."""

    def __init__(self, names: list, member: np.ndarray, outcomes: bool):
        self.names = names  # the groups, in order of their first row
        self.member = member  # [rows, groups] whether a row's episodes count in a group
        self.outcomes = outcomes

    @classmethod
    def of(cls, envs: Iterable[Any], num_rows: int) -> Optional["RowGroups"]:
        """The groups the environments declare for rows ``0 .. num_rows - 1`` (their ``copy_ids``); None if
        none declares groups or outcomes."""
        rows_of: dict = {}  # group -> its rows, groups in order of their first row
        outcomes = False
        for env in envs:
            outcomes = outcomes or bool(getattr(env, "episode_outcomes", False))
            groups = getattr(env, "row_groups", None)
            if groups is None:
                continue
            for row, names in zip(np.asarray(env.copy_ids).tolist(), _checked(env, groups)):
                for name in names:
                    rows_of.setdefault(name, []).extend([row] if row < num_rows else [])
        member = np.zeros((num_rows, len(rows_of)), bool)
        for index, rows in enumerate(rows_of.values()):
            member[rows, index] = True
        return cls(list(rows_of), member, outcomes) if rows_of or outcomes else None

    def metrics(self, prefix: str, key: str, returns: np.ndarray, rows: np.ndarray, last: np.ndarray) -> dict:
        """``<prefix>/<group>/<key>`` (the mean return of each group's episodes) and the outcome rates, of
        episodes with ``returns``, ``rows`` (their env ids) and ``last`` (their last rewards); {} if none."""
        out: dict = {}
        if not len(returns):
            return out
        if self.outcomes:
            out.update(_rates(f"{prefix}/", last))
        for index, name in enumerate(self.names):
            mine = self.member[rows, index]
            if mine.any():
                out[f"{prefix}/{name}/{key}"] = float(np.mean(returns[mine]))
                if self.outcomes:
                    out.update(_rates(f"{prefix}/{name}/", last[mine]))
        return out


def _rates(prefix: str, last: np.ndarray) -> dict:
    return {f"{prefix}{name}": float(np.mean(test(last, 0.0))) for name, test in OUTCOMES}


def _checked(env: Any, groups: Any) -> list:
    """``groups`` as ``num_envs`` tuples of names (a row's groups), or a one-line error naming the environment."""
    entries = list(groups) if isinstance(groups, (list, tuple, np.ndarray)) else None
    rows = None if entries is None else [(e,) if isinstance(e, str) else e for e in entries]
    if rows is None or len(rows) != env.num_envs or not all(
            isinstance(row, tuple) and row and all(isinstance(n, str) and n for n in row) for row in rows):
        raise PluginError(f"environment {type(env).__module__}.{type(env).__qualname__} for {env.env_id!r}: "
                          f"row_groups must be a list of num_envs = {env.num_envs} non-empty names (one per "
                          f"row, or a tuple of names where a row counts in several groups), got {groups!r}")
    return rows
