"""``TurnGames``: copies of a turn-based (AEC) game, the learner in one seat of each, one batch row per copy.

Row ``r`` (the run-wide row number, ``first_row + c``) always seats the learner at
``possible_agents[r % A]``, so with a multiple of ``A`` rows it plays every seat equally often, and
each row's episodes are one seat's (its ``row_groups``). The other seats are played by the row's opponent
(:mod:`rlengine_pettingzoo.opponents`; ``"pool"``: :mod:`rlengine_pettingzoo.pool`, a player per row that
picks a past checkpoint at each game's start): with several, row ``r`` meets ``opponents[(r // A) % K]``, so
each meets the learner in every seat. Evaluation copies (``versus``) also count each row's episodes in the
groups ``vs_<opponent>`` and ``vs_<opponent>/<seat>``. A row's step is the
learner's move and the opponents' replies up to its next turn; its reward is what the learner gained
over them (PettingZoo's cumulative reward of the seat), ``LAST`` when the game ends (discount 0, or 1
when it was truncated), and the step after that resets the game (``FIRST``, action ignored), as a
single-agent copy does. With ``agent_id`` on, a one-hot of the learner's seat is in its observation.

Copy ``c`` is seeded with ``seed + c`` at the first reset (the game and its opponents); later resets
continue its random stream.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from rlengine import ConfigError, StepType
from rlengine_pettingzoo.opponents import RandomMoves, make_opponent
from rlengine_pettingzoo.parallel import stack_rows
from rlengine_pettingzoo.pool import PoolPlayer
from rlengine_pettingzoo.spaces import RowLayout

__all__ = ["TurnGames"]

_FIRST, _MID, _LAST = np.int32(StepType.FIRST), np.int32(StepType.MID), np.int32(StepType.LAST)


class TurnGames:
    """``num_copies`` AEC games made by ``make()``; row ``c`` is the learner's seat in copy ``c``."""

    def __init__(self, env_id: str, make: Callable[[], Any], num_copies: int, seed: int, agent_id: bool,
                 global_state: bool = False, first_row: int = 0, opponents: tuple = ("random",),
                 versus: bool = False, pool: tuple | None = None):
        if global_state:
            raise ConfigError(f"environment {env_id!r} is played turn by turn, one learner row per game, which has "
                              f"no global state for a centralised critic; set [pettingzoo] global_state = false")
        self.games = [make() for _ in range(num_copies)]
        first = self.games[0]
        self.agents = list(first.possible_agents)
        self.layout = RowLayout(env_id, self.agents, first.observation_space, first.action_space, agent_id)
        self.seed = seed
        self.rngs = [np.random.default_rng(seed + c) for c in range(num_copies)]
        rows = first_row + np.arange(num_copies)
        self.seat = rows % len(self.agents)  # the learner's index in possible_agents
        self.opponents = self._players(env_id, opponents, rows, pool)
        self.versus = versus
        self.over = np.ones(num_copies, dtype=bool)
        self.observation_spec = self.layout.observation_spec

    def _players(self, env_id: str, opponents: tuple, rows: np.ndarray, pool: tuple | None) -> list:
        """Each row's opponent: the built-in ones shared, a pool player (``pool``: ``(CheckpointPool,
        sampling, moves)``) per row, since it keeps the member of the row's game."""
        space = self.games[0].action_space(self.agents[0])
        shared = {name: make_opponent(name, env_id, space) for name in opponents if name != "pool"}

        def player(name: str) -> Any:
            return shared[name] if name != "pool" else PoolPlayer(pool[0], pool[1], self.layout, RandomMoves(), pool[2])

        return [player(opponents[r]) for r in (rows // len(self.agents)) % len(opponents)]

    @property
    def rows(self) -> int:
        return len(self.games)

    @property
    def row_groups(self) -> list:
        """The learner's seat of every row; with ``versus``, its opponent too (``vs_<opponent>``, and per seat)."""
        seats = [self.agents[seat] for seat in self.seat]
        if not self.versus:
            return seats
        return [(seat, f"vs_{o.name}", f"vs_{o.name}/{seat}") for seat, o in zip(seats, self.opponents)]

    def reset(self, seeded: bool = False) -> tuple:
        obs = [self._reset(c, self.seed + c if seeded else None) for c in range(self.rows)]
        return (np.full(self.rows, _FIRST), np.zeros(self.rows, np.float32), np.ones(self.rows, np.float32),
                stack_rows(obs))

    def step(self, actions: np.ndarray) -> tuple:
        step_type = np.full(self.rows, _MID)
        reward = np.zeros(self.rows, np.float32)
        discount = np.ones(self.rows, np.float32)
        taken = ~self.over
        observations = []
        for c, game in enumerate(self.games):
            if self.over[c]:
                step_type[c] = _FIRST
                observations.append(self._reset(c, None))
                continue
            game.step(actions[c])
            obs, reward[c], terminated, truncated = self._learners_turn(c)
            if terminated or truncated:
                step_type[c], discount[c], self.over[c] = _LAST, 0.0 if terminated else 1.0, True
            observations.append(obs)
        return step_type, reward, discount, stack_rows(observations), taken

    def _reset(self, c: int, seed: int | None) -> Any:
        game = self.games[c]
        game.reset(seed=seed)
        if isinstance(self.opponents[c], PoolPlayer):
            self.opponents[c].start(self.rngs[c])  # this game's member of the pool
        self.over[c] = False
        obs, _, terminated, truncated = self._learners_turn(c)
        self.over[c] = terminated or truncated
        return obs

    def _learners_turn(self, c: int) -> tuple:
        """Opponents move until the learner's turn (or the game's end); the learner's ``(row, reward,
        terminated, truncated)`` then."""
        game, learner = self.games[c], self.agents[self.seat[c]]
        while game.agents and game.agent_selection != learner:
            obs, _, terminated, truncated, _ = game.last()
            game.step(None if terminated or truncated else self.opponents[c].move(game, obs, self.rngs[c]))
        obs, reward, terminated, truncated, _ = game.last() if game.agents else (None, 0.0, True, False, None)
        if obs is None:  # the learner has left the game: nothing more to observe
            return self.layout.zeros(), float(reward), True, False
        return self.layout.row(int(self.seat[c]), obs), float(reward), bool(terminated), bool(truncated)

    def close(self) -> None:
        for game in self.games:
            game.close()
