"""Small Gymnasium environments for tests and examples, registered on import.

* ``rlengine/Counter-v0``: fully deterministic. The observation is
  ``[step_index_in_episode, env_marker]`` (float64 ``Box`` of shape ``(2,)``)
  where ``env_marker`` is the seed of the last seeded reset (-1 before any),
  the action space is ``Discrete(2)`` and the reward is ``1 + action`` on
  every step, so tests can see which action was applied. The episode ends
  after ``episode_length`` steps (``gymnasium.make`` keyword, default 5):
  terminated when ``terminate=True`` (default), truncated otherwise.
* ``rlengine/CartPoleNoVelocity-v1``: ``CartPole-v1`` observing only the cart
  position and the pole angle (indices 0 and 2), a partially observed task
  for recurrent policies. 500 steps at most.
* ``rlengine/SlowCartPole-v1``: ``CartPole-v1`` whose ``step`` first sleeps
  ``latency`` seconds (keyword, default 0.002), a stand-in for a simulator
  or a remote environment that answers slowly without using the CPU.

Only Gymnasium and numpy are imported here, so worker processes stay light.
"""

from __future__ import annotations

import time

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.envs.classic_control.cartpole import CartPoleEnv

COUNTER_ID = "rlengine/Counter-v0"
CARTPOLE_NO_VELOCITY_ID = "rlengine/CartPoleNoVelocity-v1"
SLOW_CARTPOLE_ID = "rlengine/SlowCartPole-v1"


class CounterEnv(gymnasium.Env):
    """Counts the steps of its episode; see the module docstring."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 30}

    def __init__(self, episode_length: int = 5, terminate: bool = True, render_mode: str | None = None):
        if episode_length < 1:
            raise ValueError(f"episode_length must be at least 1, got {episode_length}")
        self.episode_length = int(episode_length)
        self.terminate = bool(terminate)
        self.render_mode = render_mode
        self.observation_space = spaces.Box(-np.inf, np.inf, shape=(2,), dtype=np.float64)
        self.action_space = spaces.Discrete(2)
        self._t = 0
        self._marker = -1.0

    def _obs(self) -> np.ndarray:
        return np.array([self._t, self._marker], dtype=np.float64)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is not None:
            self._marker = float(seed)
        self._t = 0
        return self._obs(), {}

    def step(self, action):
        self._t += 1
        end = self._t >= self.episode_length
        terminated = end and self.terminate
        truncated = end and not self.terminate
        return self._obs(), 1.0 + float(action), terminated, truncated, {}

    def render(self):
        if self.render_mode != "rgb_array":
            return None
        frame = np.zeros((8, 8, 3), dtype=np.uint8)
        frame[..., 0] = min(255, 10 * self._t)
        return frame


class CartPoleNoVelocityEnv(CartPoleEnv):
    """CartPole without the velocity entries (indices 1 and 3) of its observation."""

    _KEEP = np.array([0, 2])

    def __init__(self, render_mode: str | None = None, **kwargs):
        super().__init__(render_mode=render_mode, **kwargs)
        full = self.observation_space
        self.observation_space = spaces.Box(full.low[self._KEEP], full.high[self._KEEP], dtype=np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        obs, info = super().reset(seed=seed, options=options)
        return obs[self._KEEP], info

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        return obs[self._KEEP], reward, terminated, truncated, info


class SlowCartPoleEnv(CartPoleEnv):
    """CartPole that takes ``latency`` seconds per step (sleeping: the GIL is free meanwhile)."""

    def __init__(self, latency: float = 0.002, render_mode: str | None = None):
        super().__init__(render_mode=render_mode)
        if latency < 0:
            raise ValueError(f"latency must be >= 0 seconds, got {latency}")
        self.latency = float(latency)

    def step(self, action):
        time.sleep(self.latency)
        return super().step(action)


def _register(env_id: str, entry_point: str, **kwargs) -> None:
    if env_id not in gymnasium.registry:
        gymnasium.register(id=env_id, entry_point=entry_point, **kwargs)


_register(COUNTER_ID, f"{__name__}:CounterEnv")
_register(CARTPOLE_NO_VELOCITY_ID, f"{__name__}:CartPoleNoVelocityEnv", max_episode_steps=500, reward_threshold=475.0)
_register(SLOW_CARTPOLE_ID, f"{__name__}:SlowCartPoleEnv", max_episode_steps=500, reward_threshold=475.0)
