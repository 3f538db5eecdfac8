"""Self-play: the other seats of a turn-based game played by the learner's own past checkpoints.

The **pool** is a function of the run's checkpoints on disk: of the complete checkpoints in
``<run_dir>/checkpoints/`` (``ckpt-<iteration>``, counted once its marker ``ckpt-<iteration>.complete``
exists, as ``docs/resume.md`` lays them out), those whose iteration is a multiple of ``pool_every``, the
newest ``pool_size`` of them. Nothing else is kept, so a resumed run's pool is the same as it was. Each
member is loaded once through the engine's public :func:`rlengine.load` and kept (a member that leaves
the pool is dropped); the pool's list is read again at every game's start.

A :class:`PoolPlayer` plays one game copy's other seats: at each game's start it picks a member
(``"uniform"``: from the copy's own random stream, so a seeded run replays its opponents given the same
checkpoints; ``"latest"``: the newest), and each move is that snapshot's action for the seat's own
observation (the row the learner would get in that seat: its one-hot, its ``action_mask``): drawn from the
snapshot's exploration policy (``pool_moves = "sampled"``, from the loaded policy's own generator, seeded by
the run's seed) or its greedy action (``"greedy"``). Before the
first checkpoint (an empty pool) it plays random legal moves.
"""

from __future__ import annotations

import os
import re
import threading
from typing import Any, Callable, Optional

import numpy as np

from rlengine import CheckpointChoiceError, ConfigError, DamagedCheckpointError

__all__ = ["CheckpointPool", "PoolPlayer", "pool_of"]

_MARKER = re.compile(r"^ckpt-(\d+)\.complete$")


def _load(run_dir: str, iteration: int) -> Any:
    import rlengine  # the engine's public loader: builds the policy of one checkpoint, no environment

    return rlengine.load(run_dir, checkpoint=iteration)


class CheckpointPool:
    """The newest ``size`` checkpoints of ``run_dir`` whose iteration is a multiple of ``every``, loaded once.

    ``load(run_dir, iteration)`` makes a member's policy (default: :func:`rlengine.load`); its ``predict``
    answers one observation. Safe to share between threads (the async pipeline's env threads).
    """

    def __init__(self, run_dir: str, size: int, every: int, load: Optional[Callable[[str, int], Any]] = None):
        self.run_dir, self.size, self.every, self._load = run_dir, size, every, load or _load
        self.loads = 0  # checkpoints loaded so far (each once while it stays in the pool)
        self._snapshots: dict = {}  # iteration -> loaded policy
        self._lock = threading.Lock()

    def members(self) -> list:
        """The pool's iterations, newest first (those on disk now)."""
        directory = os.path.join(self.run_dir, "checkpoints")
        try:
            names = os.listdir(directory)
        except OSError:  # no checkpoint yet
            return []
        found = sorted((int(m.group(1)) for m in map(_MARKER.match, names) if m), reverse=True)
        return [n for n in found if n % self.every == 0][:self.size]

    def snapshot(self, iteration: int) -> Optional[Any]:
        """The policy of checkpoint ``iteration``, loaded on first use; None if it is gone (pruned since)."""
        with self._lock:
            if iteration not in self._snapshots:
                try:
                    policy = self._load(self.run_dir, iteration)
                except (FileNotFoundError, CheckpointChoiceError, DamagedCheckpointError):  # pruned or damaged since
                    return None
                self.loads += 1
                self._snapshots[iteration] = _Locked(policy)
                members = set(self.members()) | {iteration}
                for gone in [n for n in self._snapshots if n not in members]:
                    del self._snapshots[gone]  # out of the pool: free its model
            return self._snapshots[iteration]

    def pick(self, sampling: str, rng: np.random.Generator) -> Optional[Any]:
        """A member for one game (``"uniform"`` draws from ``rng``, ``"latest"`` takes the newest); None when
        the pool is empty."""
        members = self.members()
        if not members:
            return None
        chosen = members[0] if sampling == "latest" else members[int(rng.integers(len(members)))]
        return self.snapshot(chosen)


class _Locked:
    """A loaded policy whose ``predict`` one thread calls at a time (an interpreter is not re-entrant)."""

    def __init__(self, policy: Any):
        self.policy, self._lock = policy, threading.Lock()

    def predict(self, observation: Any, greedy: bool) -> Any:
        with self._lock:
            return self.policy.predict(observation, deterministic=greedy)[0]


class PoolPlayer:
    """One game copy's other seats, played by a member of ``pool`` per game (random moves before any)."""

    name = "pool"

    def __init__(self, pool: CheckpointPool, sampling: str, layout: Any, fallback: Any, moves: str = "greedy"):
        self.pool, self.sampling, self.layout, self.fallback = pool, sampling, layout, fallback
        self.greedy = moves == "greedy"
        self.member: Optional[Any] = None
        self.unmasked = 0  # moves the snapshot chose against the mask (replaced by random legal ones): none expected

    def start(self, rng: np.random.Generator) -> None:
        """A new game: pick its member."""
        self.member = self.pool.pick(self.sampling, rng)

    def move(self, game: Any, obs: Any, rng: np.random.Generator) -> Any:
        if self.member is None:
            return self.fallback.move(game, obs, rng)
        seat = self.layout.agents.index(game.agent_selection)
        action = np.asarray(self.member.predict(self.layout.row(seat, obs), self.greedy))
        mask = obs.get("action_mask") if isinstance(obs, dict) else None
        if mask is not None and not mask[int(action)]:
            self.unmasked += 1
            return self.fallback.move(game, obs, rng)
        return int(action) if action.ndim == 0 else action


_POOLS: dict = {}  # (run_dir, size, every) -> CheckpointPool: one per run in a process (training and evaluation)


def pool_of(config: Any, env_id: str) -> CheckpointPool:
    """The process's pool for ``config``'s run directory and pool settings."""
    if not config.run_dir:
        raise ConfigError(f"[pettingzoo] opponent \"pool\" plays the run's own checkpoints, and {env_id!r} was "
                          f"built without a run directory: run it through rlengine (train, eval, play), which sets "
                          f"[pettingzoo] run_dir")
    key = (config.run_dir, config.pool_size, config.pool_every)
    if key not in _POOLS:
        _POOLS[key] = CheckpointPool(*key)
    return _POOLS[key]
