"""The tests' games: the plugin's testing game (``rlengine_pettingzoo.testing``), and a cooperative one.

``MixedActionsGame`` is the testing game with ``short`` choosing among 3 actions, the others among 2.
``CoopGame`` is a cooperative game for DQN: see its docstring.
"""

import functools

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv
from rlengine_pettingzoo.testing import AGENTS, LENGTH, QUIT_AT, TinyGame, parallel_env

__all__ = ["AGENTS", "LENGTH", "QUIT_AT", "TinyGame", "parallel_env", "spaces", "MixedActionsGame", "CoopGame"]


def MixedActionsGame(**kwargs):  # noqa: N802 (a game class's stand-in: the tests make games by calling it)
    return TinyGame(action_sizes={"short": 3}, **kwargs)


class CoopGame(ParallelEnv):
    """Two agents, ``COOP_LENGTH`` steps, ``Discrete(2)`` actions; both see the same random bit (one-hot).

    ``left`` is right to play the bit and ``right`` its opposite; both are paid 1 on a step where both
    are right, else 0 (a shared reward). The most an agent can gain is ``COOP_LENGTH``, random play
    gains a quarter of it, and one policy for both must tell them apart by the agent id.
    """

    metadata = {"name": "coop_v0", "is_parallelizable": True}
    agents_names = ["left", "right"]

    def __init__(self, render_mode=None):
        self.possible_agents = list(self.agents_names)
        self.render_mode = render_mode
        self.rng = np.random.default_rng(0)
        self.bit, self.t = 0, 0

    @functools.lru_cache(maxsize=None)
    def observation_space(self, agent):
        return spaces.Box(0.0, 1.0, (2,), np.float32)

    @functools.lru_cache(maxsize=None)
    def action_space(self, agent):
        return spaces.Discrete(2)

    def _observe(self):
        self.bit = int(self.rng.integers(2))
        return {a: np.eye(2, dtype=np.float32)[self.bit] for a in self.agents}

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.t, self.agents = 0, list(self.possible_agents)
        return self._observe(), {a: {} for a in self.agents}

    def step(self, actions):
        self.t += 1
        both_right = int(actions["left"]) == self.bit and int(actions["right"]) == 1 - self.bit
        rewards = {a: float(both_right) for a in self.agents}
        over = self.t >= COOP_LENGTH
        obs = self._observe()
        ends = {a: over for a in self.agents}
        infos = {a: {} for a in self.agents}
        if over:
            self.agents = []
        return obs, rewards, {a: False for a in ends}, ends, infos


COOP_LENGTH = 8
