"""A tiny Parallel game to test multi-agent code with: agents that leave early, spaces that differ, masks.

It passes PettingZoo's own ``parallel_api_test`` in every variant, and the engine runs it as any
game (a module whose ``parallel_env`` makes it; the plugin's tests put it in place of a real one)::

    from pettingzoo.test import parallel_api_test
    from rlengine_pettingzoo.testing import TinyGame

    parallel_api_test(TinyGame(action_sizes={"short": 3}, masks=True), num_cycles=10)

Three agents. ``quitter`` terminates after ``QUIT_AT`` steps, the others are truncated after
``LENGTH``. ``short`` observes 2 numbers, the others 3: ``[step, its last action, agent index]`` (cut
to 2 for ``short``). An agent's reward is its last action (times ``action_pay``) plus 10 times its
index, so a row's reward says whose it is, and its best action is its largest allowed one.

* ``action_sizes``: ``Discrete`` sizes by agent (default 2 each), e.g. ``{"short": 3}``.
* ``masks``: observations are ``{"observation": ..., "action_mask": int8 [n]}``; on odd steps an
  agent's largest action is masked out.

An action outside an agent's space, or masked out, raises ``ValueError`` and is kept in the class's
``refused`` list (a run's fault guard may restart a game that raised; the list still tells).
"""

from __future__ import annotations

import functools
from typing import Any, Optional

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

__all__ = ["AGENTS", "LENGTH", "QUIT_AT", "TinyGame", "parallel_env"]

AGENTS = ["quitter", "short", "stayer"]
QUIT_AT, LENGTH = 2, 4


class TinyGame(ParallelEnv):
    """The game: see the module's docstring."""

    metadata = {"name": "tiny_v0", "is_parallelizable": True}
    refused: list = []

    def __init__(self, render_mode: Optional[str] = None, action_pay: float = 1, action_sizes: Optional[dict] = None,
                 masks: bool = False):
        self.possible_agents = list(AGENTS)
        self.render_mode = render_mode
        self.action_pay = action_pay
        self.sizes = {a: int((action_sizes or {}).get(a, 2)) for a in AGENTS}
        self.masks = masks
        self.t = 0

    @functools.lru_cache(maxsize=None)
    def observation_space(self, agent: str) -> Any:
        box = spaces.Box(-100.0, 100.0, (2 if agent == "short" else 3,), np.float32)
        if not self.masks:
            return box
        return spaces.Dict({"observation": box, "action_mask": spaces.Box(0, 1, (self.sizes[agent],), np.int8)})

    @functools.lru_cache(maxsize=None)
    def action_space(self, agent: str) -> Any:
        return spaces.Discrete(self.sizes[agent])

    def allowed(self, agent: str) -> np.ndarray:
        """The agent's action mask now: all its actions, but its largest on odd steps (with ``masks``)."""
        mask = np.ones(self.sizes[agent], np.int8)
        if self.masks and self.t % 2 == 1:
            mask[-1] = 0
        return mask

    def _observe(self, agent: str, action: int) -> Any:
        full = np.array([self.t, action, AGENTS.index(agent)], np.float32)
        obs = full[: self.observation_space(agent)["observation"].shape[0] if self.masks else
                   self.observation_space(agent).shape[0]]
        return {"observation": obs, "action_mask": self.allowed(agent)} if self.masks else obs

    def reset(self, seed: Optional[int] = None, options: Optional[dict] = None) -> tuple:
        self.t = 0
        self.agents = list(AGENTS)
        return {a: self._observe(a, 0) for a in self.agents}, {a: {} for a in self.agents}

    def step(self, actions: dict) -> tuple:
        for agent in self.agents:
            action = int(actions[agent])
            if not (0 <= action < self.sizes[agent] and self.allowed(agent)[action]):
                TinyGame.refused.append((agent, self.t, action))
                raise ValueError(f"{agent} may not play {action} at step {self.t}")
        self.t += 1
        obs = {a: self._observe(a, int(actions[a])) for a in self.agents}
        rewards = {a: self.action_pay * float(actions[a]) + 10 * AGENTS.index(a) for a in self.agents}
        terminated = {a: a == "quitter" and self.t >= QUIT_AT for a in self.agents}
        truncated = {a: a != "quitter" and self.t >= LENGTH for a in self.agents}
        infos: dict = {a: {} for a in self.agents}
        self.agents = [a for a in self.agents if not (terminated[a] or truncated[a])]
        return obs, rewards, terminated, truncated, infos


def parallel_env(**kwargs: Any) -> TinyGame:
    """The engine's way in (``pettingzoo/<module>`` ids make a module's ``parallel_env``)."""
    return TinyGame(**kwargs)
