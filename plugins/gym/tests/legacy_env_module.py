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
from rlengine_gym.test_envs import CounterEnv


class LegacyCounter(gym.Env):
    """gym 0.26: ``reset(seed=...) -> (obs, info)``, ``step -> (obs, reward, terminated, truncated, info)``."""

    def __init__(self, episode_length: int = 4, render_mode=None):
        self.counter = CounterEnv(episode_length)  # rlengine/Counter-v0 counts
        self.render_mode = render_mode
        self.observation_space = spaces.Box(-np.inf, np.inf, shape=(2,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        obs, info = self.counter.reset(seed=seed)
        return obs.astype(np.float32), info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.counter.step(action)
        return obs.astype(np.float32), reward, terminated, truncated, info


class LegacyCounterV21:
    """gym 0.21: ``seed(seed)``, ``reset() -> obs``, ``step -> (obs, reward, done, info)``."""

    metadata = {"render.modes": []}
    reward_range = (-float("inf"), float("inf"))
    spec = None

    def __init__(self, episode_length: int = 4):
        self.counter = CounterEnv(episode_length)
        self.observation_space = spaces.Box(-np.inf, np.inf, shape=(2,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)
        self._seed = None

    def seed(self, seed=None):
        self._seed = seed
        return [seed]

    def reset(self):
        obs, _ = self.counter.reset(seed=self._seed)
        self._seed = None  # the next reset keeps the marker
        return obs.astype(np.float32)

    def step(self, action):
        obs, reward, terminated, _, info = self.counter.step(action)
        return obs.astype(np.float32), reward, terminated, info

    def close(self):
        pass


gym.register(id="LegacyCounter-v0", entry_point=f"{__name__}:LegacyCounter", max_episode_steps=6)
gym.register(id="LegacyCounterV21-v0", entry_point=f"{__name__}:LegacyCounterV21", max_episode_steps=6)
