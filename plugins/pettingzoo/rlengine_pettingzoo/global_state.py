"""``GlobalState``: what a centralised critic sees, the ``global_state`` leaf of every row (``[pettingzoo]
global_state = true``).

The game's own ``state()`` where it declares a flat ``state_space`` (the MPE games: every entity's
position and velocity), else every agent's observation joined, in ``possible_agents`` order (an agent that
is not in the game adds zeros). Every row of a copy gets the same state; the row's own observation (with its
agent id) stays beside it, so PPO's ``central_critic`` feeds the critic the state and the agent id, and the
actor the rest.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf
from gymnasium import spaces

from rlengine import ConfigError

__all__ = ["GLOBAL_STATE_KEY", "GlobalState"]

GLOBAL_STATE_KEY = "global_state"


def _flat(space: Any) -> bool:
    return isinstance(space, spaces.Box) and len(space.shape) == 1


class GlobalState:
    """The ``global_state`` of one game: its spec, its value after each step, and the row nest holding it."""

    def __init__(self, env_id: str, game: Any, agents: list):
        self.agents = agents
        state_space = getattr(game, "state_space", None)
        self.from_game = _flat(state_space)
        if self.from_game:
            self.size = int(state_space.shape[0])
            return
        obs_spaces = [game.observation_space(a) for a in agents]
        if not all(_flat(s) for s in obs_spaces):
            raise ConfigError(f"environment {env_id!r} has no flat state_space and its agents' observations are not "
                              f"flat Box spaces, so there is no global state to join; set [pettingzoo] "
                              f"global_state = false")
        self.sizes = [int(s.shape[0]) for s in obs_spaces]
        self.size = sum(self.sizes)

    @property
    def spec(self) -> tf.TensorSpec:
        return tf.TensorSpec((self.size,), tf.float32)

    def zeros(self) -> np.ndarray:
        return np.zeros(self.size, np.float32)

    def of(self, game: Any, observations: dict) -> np.ndarray:
        """The state after the step (or reset) that gave ``observations``."""
        if self.from_game:
            return np.asarray(game.state(), np.float32).reshape(self.size)
        return np.concatenate([np.asarray(observations[a], np.float32) if a in observations else np.zeros(n, np.float32)
                               for a, n in zip(self.agents, self.sizes)])


def with_state(row: Any, state: np.ndarray) -> dict:
    """The row's observation nest with the state beside it."""
    if isinstance(row, dict):
        return {**row, GLOBAL_STATE_KEY: state}
    return {"observation": row, GLOBAL_STATE_KEY: state}


def spec_with_state(spec: Any, state: GlobalState) -> dict:
    if isinstance(spec, dict):
        return {**spec, GLOBAL_STATE_KEY: state.spec}
    return {"observation": spec, GLOBAL_STATE_KEY: state.spec}
