"""Registers, on import, CartPole with its observation split into a dict: for datasets of Dict spaces."""

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.envs.classic_control.cartpole import CartPoleEnv

SPLIT_ID = "rlengine_test/SplitCartPole-v0"


class SplitCartPole(gymnasium.Env):
    """CartPole observed as ``{"cart": [x, x_dot], "pole": [theta, theta_dot], "phase": 1 or 2}``, where
    ``phase`` (a ``Discrete(2, start=1)``: the step's parity, plus one) carries nothing a policy needs."""

    metadata = {"render_modes": []}

    def __init__(self):
        self.cartpole = CartPoleEnv()
        box = spaces.Box(-np.inf, np.inf, (2,), np.float32)
        self.observation_space = spaces.Dict({"cart": box, "pole": box, "phase": spaces.Discrete(2, start=1)})
        self.action_space = self.cartpole.action_space
        self.steps = 0

    def _split(self, observation):
        return {"cart": observation[:2], "pole": observation[2:], "phase": np.int64(self.steps % 2 + 1)}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.steps = 0
        observation, info = self.cartpole.reset(seed=seed)
        return self._split(observation), info

    def step(self, action):
        observation, reward, terminated, truncated, info = self.cartpole.step(action)
        self.steps += 1
        return self._split(observation), reward, terminated, truncated, info


def lean_expert(observation):
    """The tests' scripted CartPole expert, reading the pole's half of the dict."""
    theta, theta_dot = observation["pole"]
    return int(3 * theta + theta_dot > 0)


gymnasium.register(id=SPLIT_ID, entry_point=f"{__name__}:SplitCartPole", max_episode_steps=500)
