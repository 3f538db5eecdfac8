"""Two small environments written for the old gym package, registered with gym on import (tests).

``legacy_env_module:LegacyCounter-v0`` follows the gym 0.26 API, ``LegacyCounterV21-v0`` the
0.21 one (``reset()`` returns the observation alone, ``step`` returns ``done``, ``seed()``
seeds). Both count the steps of their episode like ``rlengine/Counter-v0``: the observation is
``[step_index, seed]``, the reward ``1 + action``, and an episode ends after ``episode_length``
steps (default 4). The id's step limit is 6 (``max_episode_steps``).
"""

import gym
import numpy as np
from gym import spaces


class LegacyCounter(gym.Env):
    """gym 0.26: ``reset(seed=...) -> (obs, info)``, ``step -> (obs, reward, terminated, truncated, info)``."""

    def __init__(self, episode_length: int = 4, render_mode=None):
        self.episode_length = episode_length
        self.render_mode = render_mode
        self.observation_space = spaces.Box(-np.inf, np.inf, shape=(2,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)
        self._t, self._marker = 0, -1.0

    def _obs(self):
        return np.array([self._t, self._marker], dtype=np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if seed is not None:
            self._marker = float(seed)
        self._t = 0
        return self._obs(), {}

    def step(self, action):
        self._t += 1
        return self._obs(), 1.0 + float(action), self._t >= self.episode_length, False, {}


class LegacyCounterV21:
    """gym 0.21: ``seed(seed)``, ``reset() -> obs``, ``step -> (obs, reward, done, info)``."""

    metadata = {"render.modes": []}
    reward_range = (-float("inf"), float("inf"))
    spec = None

    def __init__(self, episode_length: int = 4):
        self.episode_length = episode_length
        self.observation_space = spaces.Box(-np.inf, np.inf, shape=(2,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)
        self._t, self._marker = 0, -1.0

    def seed(self, seed=None):
        self._marker = float(seed)
        return [seed]

    def reset(self):
        self._t = 0
        return np.array([self._t, self._marker], dtype=np.float32)

    def step(self, action):
        self._t += 1
        obs = np.array([self._t, self._marker], dtype=np.float32)
        return obs, 1.0 + float(action), self._t >= self.episode_length, {}

    def close(self):
        pass


gym.register(id="LegacyCounter-v0", entry_point=f"{__name__}:LegacyCounter", max_episode_steps=6)
gym.register(id="LegacyCounterV21-v0", entry_point=f"{__name__}:LegacyCounterV21", max_episode_steps=6)
