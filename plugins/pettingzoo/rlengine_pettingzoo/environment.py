"""``PettingZooEnvironment``: copies of a PettingZoo game as one batched rlengine environment.

``train.num_envs`` counts batch rows. With the Parallel API every agent of every copy is a row
(``num_envs = copies x agents``, so it must be a multiple of the game's agent count); turn by turn
(``api = "turns"``) each copy is one row, the learner's seat. One policy acts for every row
(parameter sharing); see :mod:`rlengine_pettingzoo.parallel` and :mod:`rlengine_pettingzoo.turns`
for what the rows' time steps say. ``env_id`` numbers the rows from ``first_env_id``.

Evaluation copies (``evaluation = true``) round their rows up to whole games: the engine asks for one
row per evaluation episode, and every agent's episode counts as one.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rlengine import ConfigError, Environment, SpecMismatchError, TimeStep
from rlengine_pettingzoo.config import PettingZooConfig, section_of
from rlengine_pettingzoo.env_ids import resolve_module
from rlengine_pettingzoo.parallel import ParallelGames
from rlengine_pettingzoo.pool import pool_of
from rlengine_pettingzoo.turns import TurnGames

__all__ = ["PettingZooConfig", "PettingZooEnvironment"]


def _games_class(module: Any, env_id: str, api: str) -> tuple:
    """``(class, make)``: how the run's API steps the module's game."""
    kind = api if api != "auto" else "parallel" if hasattr(module, "parallel_env") else "turns"
    if kind == "turns":
        if not hasattr(module, "env"):
            raise ConfigError(f"environment {env_id!r} has no turn-based (AEC) game; use [pettingzoo] api = "
                              f"\"parallel\" or \"auto\"")
        return TurnGames, module.env
    if hasattr(module, "parallel_env"):
        return ParallelGames, module.parallel_env
    return ParallelGames, _aec_to_parallel(module, env_id)


def _aec_to_parallel(module: Any, env_id: str) -> Any:
    from pettingzoo.utils.conversions import aec_to_parallel

    def make(**kwargs: Any) -> Any:
        try:
            return aec_to_parallel(module.env(**kwargs))
        except AssertionError:
            raise ConfigError(f"environment {env_id!r} is turn-based and PettingZoo cannot step it as a Parallel "
                              f"game; set [pettingzoo] api = \"turns\" (or \"auto\")") from None
    return make


class PettingZooEnvironment(Environment):
    """``num_envs`` rows of the PettingZoo game ``env_id`` (``mpe2/<env>`` or ``pettingzoo/<family>.<env>``)."""

    config_class = PettingZooConfig

    def __init__(self, env_id: str, num_envs: int, seed: int, first_env_id: int = 0, config: Any = None):
        config = section_of(config)
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ConfigError(f"num_envs must be a positive integer, got {num_envs!r}")
        cls, make = _games_class(resolve_module(env_id), env_id, config.api)
        kwargs = dict(config.make_kwargs, **({"render_mode": config.render_mode} if config.render_mode else {}))
        per_copy = self._rows_per_copy(cls, make, kwargs, env_id)
        copies = -(-int(num_envs) // per_copy)
        if copies * per_copy != num_envs and not config.evaluation:
            raise ConfigError(f"train.num_envs = {num_envs} counts agent rows, and every copy of {env_id!r} has "
                              f"{per_copy} agents: set train.num_envs to a multiple of {per_copy} "
                              f"(e.g. {copies * per_copy})")
        turns = self._turns(config, env_id) if cls is TurnGames else {}
        self._games = cls(env_id, lambda: make(**kwargs), copies, int(seed or 0) + int(first_env_id), config.agent_id,
                          config.global_state, int(first_env_id), **turns)
        super().__init__(env_id, copies * per_copy, seed, int(first_env_id), config)
        layout = self._games.layout
        self.agents = layout.agents
        self.row_groups = self._games.row_groups  # per-agent (per-seat; in evaluation per opponent) episode metrics
        # a two-player game's last reward of the learner's seat is +1, 0 or -1: its win, draw and loss rates
        self.episode_outcomes = cls is TurnGames and len(self.agents) == 2
        self._action_spec = layout.action_spec
        self._action_shape = (self.num_envs, *self._action_spec.shape)
        self._action_dtype = self._action_spec.dtype.as_numpy_dtype
        self._time_step_spec = TimeStep.spec_of(self._games.observation_spec, self._action_spec)
        self._started = False

    @staticmethod
    def _turns(config: PettingZooConfig, env_id: str) -> dict:
        """The keyword arguments of :class:`TurnGames`: its opponents, and the pool when one of them plays it."""
        opponents = config.opponents()
        pool = (pool_of(config, env_id), config.pool_sampling, config.pool_moves) if "pool" in opponents else None
        return {"opponents": opponents, "versus": config.evaluation, "pool": pool}

    @staticmethod
    def _rows_per_copy(cls: type, make: Any, kwargs: dict, env_id: str) -> int:
        if cls is TurnGames:
            return 1
        try:
            game = make(**kwargs)
        except TypeError as err:
            raise ConfigError(f"cannot make {env_id!r} with make_kwargs {kwargs}: {err}") from None
        try:
            return len(game.possible_agents)
        finally:
            game.close()

    def time_step_spec(self) -> TimeStep:
        return self._time_step_spec

    def action_spec(self) -> Any:
        return self._action_spec

    def reset(self) -> TimeStep:
        step_type, reward, discount, obs = self._live().reset(seeded=not self._started)
        self._started = True
        return TimeStep(step_type, reward, discount, obs, np.zeros(self._action_shape, self._action_dtype),
                        self.copy_ids)

    def step(self, action: Any) -> TimeStep:
        if not self._started:
            raise RuntimeError(f"{type(self).__name__}.step() called before reset()")
        prev_action = np.array(action, dtype=self._action_dtype)  # a fresh copy: the time step keeps it
        if prev_action.shape != self._action_shape:
            raise SpecMismatchError(f"environment {self.env_id!r} expects actions of shape {self._action_shape} "
                                    f"(num_envs rows, then the action's shape), got shape {prev_action.shape}")
        step_type, reward, discount, obs, taken = self._live().step(prev_action)
        prev_action[~taken] = 0  # the actions the games ignored
        return TimeStep(step_type, reward, discount, obs, prev_action, self.copy_ids)

    def render(self) -> Any:
        return self._live().games[0].render()

    def close(self) -> None:
        games, self._games = getattr(self, "_games", None), None
        if games is not None:
            games.close()

    def _live(self) -> Any:
        if self._games is None:
            raise RuntimeError(f"{type(self).__name__} for {self.env_id!r} is closed")
        return self._games

    def __enter__(self) -> "PettingZooEnvironment":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"PettingZooEnvironment({self.env_id!r}, num_envs={self.num_envs}, seed={self.seed}, "
                f"first_env_id={self.first_env_id})")
