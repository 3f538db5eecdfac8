"""A tiny Parallel game for the tests: agents that leave early and observations of different lengths.

Three agents, ``Discrete(2)`` actions. ``quitter`` terminates after 2 steps, the others are truncated
after 4. ``short`` observes 2 numbers, the others 3: ``[step, its last action, agent index]`` (cut to
2 for ``short``). Each agent's reward is its last action (times ``action_pay``, 1 by default) plus 10
times its index, so a row's reward says whose it is.

``MixedActionsGame`` is the same game with ``short`` choosing among 3 actions, the others among 2, and
refusing an action outside its agent's space. ``CoopGame`` is a cooperative one for DQN: see its docstring.
"""

import functools

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

AGENTS = ["quitter", "short", "stayer"]
QUIT_AT, LENGTH = 2, 4


class TinyGame(ParallelEnv):
    metadata = {"name": "tiny_v0", "is_parallelizable": True}

    def __init__(self, render_mode=None, action_pay=1):
        self.possible_agents = list(AGENTS)
        self.render_mode = render_mode
        self.action_pay = action_pay
        self.t = 0

    @functools.lru_cache(maxsize=None)
    def observation_space(self, agent):
        size = 2 if agent == "short" else 3
        return spaces.Box(-100.0, 100.0, (size,), np.float32)

    @functools.lru_cache(maxsize=None)
    def action_space(self, agent):
        return spaces.Discrete(2)

    def _obs(self, agent, action):
        full = np.array([self.t, action, AGENTS.index(agent)], np.float32)
        return full[: self.observation_space(agent).shape[0]]

    def reset(self, seed=None, options=None):
        self.t = 0
        self.agents = list(AGENTS)
        return {a: self._obs(a, 0) for a in self.agents}, {a: {} for a in self.agents}

    def step(self, actions):
        self.t += 1
        obs = {a: self._obs(a, int(actions[a])) for a in self.agents}
        rewards = {a: self.action_pay * float(actions[a]) + 10 * AGENTS.index(a) for a in self.agents}
        terminated = {a: a == "quitter" and self.t >= QUIT_AT for a in self.agents}
        truncated = {a: a != "quitter" and self.t >= LENGTH for a in self.agents}
        infos = {a: {} for a in self.agents}
        self.agents = [a for a in self.agents if not (terminated[a] or truncated[a])]
        return obs, rewards, terminated, truncated, infos


def parallel_env(**kwargs):
    return TinyGame(**kwargs)


class MixedActionsGame(TinyGame):
    """``TinyGame`` whose ``short`` has ``Discrete(3)`` actions; an action outside an agent's space raises, and is
    kept in ``refused`` (a run's fault guard may restart a raising game: the list still tells)."""

    metadata = {"name": "mixed_v0", "is_parallelizable": True}
    refused: list = []

    @functools.lru_cache(maxsize=None)
    def action_space(self, agent):
        return spaces.Discrete(3 if agent == "short" else 2)

    def step(self, actions):
        for agent in self.agents:
            if not self.action_space(agent).contains(int(actions[agent])):
                MixedActionsGame.refused.append((agent, int(actions[agent])))
                raise ValueError(f"{agent} cannot play {actions[agent]}")
        return super().step(actions)


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
