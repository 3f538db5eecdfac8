"""``ParallelGames``: copies of a Parallel-API game, every agent of every copy one batch row.

Row ``c * A + i`` is agent ``possible_agents[i]`` of copy ``c`` (``A`` agents per game). What a row's
time steps say:

- a copy's episode starts with every row ``FIRST`` (reward 0, discount 1) and goes on with ``MID``
  rows carrying each agent's own reward;
- an agent that terminates or is truncated (or leaves ``agents``) gets ``LAST`` on that step, its
  discount 0 when terminated, 1 when truncated;
- from then until its copy's game is over, the row is *finished*: every step is ``FIRST`` with reward
  0, discount 1, an observation of zeros (a dict's ``action_mask`` allows action 0 only) and its action
  ignored. A row of ``FIRST`` steps starts no episode that counts: the engine's episode statistics and
  its evaluation count an episode from ``FIRST`` to ``LAST``;
- when no agent is left, the next step resets the copy (every row ``FIRST``, actions ignored), as a
  single-agent copy resets on the step after ``LAST``.

Copy ``c`` is seeded with ``seed + c`` at the first reset; later resets continue its random stream.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import tensorflow as tf

from rlengine import StepType
from rlengine_pettingzoo.global_state import GlobalState, spec_with_state, with_state
from rlengine_pettingzoo.spaces import RowLayout

__all__ = ["ParallelGames", "stack_rows"]

_FIRST, _MID, _LAST = np.int32(StepType.FIRST), np.int32(StepType.MID), np.int32(StepType.LAST)


def stack_rows(rows: list) -> Any:
    """A list of row nests as one nest of ``[rows, ...]`` arrays."""
    return tf.nest.map_structure(lambda *leaves: np.stack(leaves), *rows)


class ParallelGames:
    """``num_copies`` games made by ``make()``, stepped one after the other, their agents as rows."""

    def __init__(self, env_id: str, make: Callable[[], Any], num_copies: int, seed: int, agent_id: bool,
                 global_state: bool = False, first_row: int = 0):  # first_row: TurnGames' (every copy is alike here)
        self.games = [make() for _ in range(num_copies)]
        first = self.games[0]
        self.agents = list(first.possible_agents)
        self.layout = RowLayout(env_id, self.agents, first.observation_space, first.action_space, agent_id)
        self.state = GlobalState(env_id, first, self.agents) if global_state else None
        self.seed = seed
        self.in_game = np.zeros((num_copies, len(self.agents)), dtype=bool)  # the row's agent is playing
        self.over = np.ones(num_copies, dtype=bool)  # the copy's game has no agent left
        self._idle = self.layout.zeros() if self.state is None else with_state(self.layout.zeros(), self.state.zeros())

    @property
    def observation_spec(self) -> Any:
        spec = self.layout.observation_spec
        return spec if self.state is None else spec_with_state(spec, self.state)

    @property
    def rows(self) -> int:
        return len(self.games) * len(self.agents)

    @property
    def row_groups(self) -> list:
        """The agent of every row: ``possible_agents`` once per copy."""
        return self.agents * len(self.games)

    def reset(self, seeded: bool = False) -> tuple:
        """Every copy afresh: ``(step_type, reward, discount, observation)`` rows, all ``FIRST``."""
        obs = [self._reset(c, self.seed + c if seeded else None) for c in range(len(self.games))]
        rows = self.rows
        return (np.full(rows, _FIRST), np.zeros(rows, np.float32), np.ones(rows, np.float32),
                stack_rows([o for copy in obs for o in copy]))

    def step(self, actions: np.ndarray) -> tuple:
        """One action per row (``[rows, ...]``); the rows of the next time step, and which rows' actions the
        games took (the others were ignored: finished rows and copies that reset)."""
        agents = len(self.agents)
        step_type = np.full((len(self.games), agents), _FIRST)
        reward = np.zeros((len(self.games), agents), np.float32)
        discount = np.ones((len(self.games), agents), np.float32)
        taken = self.in_game & ~self.over[:, None]
        observations = []
        for c, game in enumerate(self.games):
            if self.over[c]:
                observations.extend(self._reset(c, None))
                continue
            acting = {a: actions[c * agents + i] for i, a in enumerate(self.agents) if self.in_game[c, i]}
            obs, rewards, terminated, truncated, _ = game.step(acting)
            rows = self._after_step(c, game, obs, rewards, terminated, truncated, step_type[c], reward[c], discount[c])
            observations.extend(self._with_state(game, obs, rows))
            self.over[c] = not game.agents
        return (step_type.reshape(-1), reward.reshape(-1), discount.reshape(-1), stack_rows(observations),
                taken.reshape(-1))

    def _after_step(self, c: int, game: Any, obs: dict, rewards: dict, terminated: dict, truncated: dict,
                    step_type: np.ndarray, reward: np.ndarray, discount: np.ndarray) -> list:
        """Fill copy ``c``'s rows of the step (in place) and return their observations."""
        observations = []
        for i, agent in enumerate(self.agents):
            if not self.in_game[c, i]:  # finished earlier: FIRST, reward 0, discount 1 (already so)
                observations.append(self._idle)
                continue
            ended = bool(terminated.get(agent, False) or truncated.get(agent, False) or agent not in game.agents)
            step_type[i] = _LAST if ended else _MID
            reward[i] = rewards.get(agent, 0.0)
            discount[i] = 0.0 if terminated.get(agent, False) else 1.0
            observations.append(self.layout.row(i, obs[agent]) if agent in obs else self._idle)
            self.in_game[c, i] = not ended
        return observations

    def _reset(self, c: int, seed: int | None) -> list:
        obs, _ = self.games[c].reset(seed=seed)
        self.in_game[c] = [a in obs for a in self.agents]
        self.over[c] = not self.in_game[c].any()
        rows = [self.layout.row(i, obs[a]) if a in obs else self._idle for i, a in enumerate(self.agents)]
        return self._with_state(self.games[c], obs, rows)

    def _with_state(self, game: Any, obs: dict, rows: list) -> list:
        """The rows with the game's state beside each (a finished row's stays zeros)."""
        if self.state is None:
            return rows
        state = self.state.of(game, obs)
        return [row if row is self._idle else with_state(row, state) for row in rows]

    def close(self) -> None:
        for game in self.games:
            game.close()
