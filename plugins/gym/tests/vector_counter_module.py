"""A counter with a native vector env in each autoreset mode, registered with Gymnasium on import (tests).

``rlengine-test/StaggeredCounter{NextStep,Disabled,SameStep}-v0``: one copy is
``rlengine/Counter-v0`` whose episodes last ``episode_length + seed % 3`` steps, so copies
seeded in a row end their episodes on different steps. The vector env steps all copies with
numpy and declares the autoreset mode of its id; reset with ``seed`` gives copy ``i`` the
marker ``seed + i``, as ``SyncVectorEnv`` seeds its copies.
"""

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space
from rlengine_gym.test_envs import CounterEnv


class StaggeredCounter(CounterEnv):
    def step(self, action):
        obs, reward, _, _, info = super().step(action)
        end = self._t >= self.episode_length + int(self._marker) % 3
        return obs, reward, end and self.terminate, end and not self.terminate, info


class VectorStaggeredCounter(VectorEnv):
    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(self, num_envs: int = 1, episode_length: int = 5, terminate: bool = True):
        self.num_envs, self.episode_length, self.terminate = num_envs, episode_length, terminate
        self.single_observation_space = spaces.Box(-np.inf, np.inf, shape=(2,), dtype=np.float64)
        self.single_action_space = spaces.Discrete(2)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.t = np.zeros(num_envs, np.int64)
        self.marker = np.full(num_envs, -1.0)
        self.prev_done = np.zeros(num_envs, bool)

    def _obs(self):
        return np.stack([self.t.astype(np.float64), self.marker], axis=1)

    def reset(self, *, seed=None, options=None):
        mask = (options or {}).get("reset_mask", np.ones(self.num_envs, bool))
        if seed is not None:
            self.marker = float(seed) + np.arange(self.num_envs)
        self.t[mask] = 0
        self.prev_done[mask] = False
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        reward = 1.0 + np.asarray(action, np.float64)
        end = self.t >= self.episode_length + self.marker.astype(np.int64) % 3
        terminated, truncated = end & self.terminate, end & (not self.terminate)
        mode, info = self.metadata["autoreset_mode"], {}
        if mode == AutoresetMode.NEXT_STEP:
            restart = self.prev_done
            self.t[restart] = 0
            reward[restart], terminated[restart], truncated[restart] = 0.0, False, False
            self.prev_done = terminated | truncated
        elif mode == AutoresetMode.SAME_STEP and end.any():
            info = {"final_obs": self._obs(), "_final_obs": end}
            self.t[end] = 0
        return self._obs(), reward, terminated, truncated, info


class VectorStaggeredCounterDisabled(VectorStaggeredCounter):
    metadata = {"autoreset_mode": AutoresetMode.DISABLED, "render_modes": []}


class VectorStaggeredCounterSameStep(VectorStaggeredCounter):
    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}


IDS = {}
for _mode, _vector in (("NextStep", "VectorStaggeredCounter"), ("Disabled", "VectorStaggeredCounterDisabled"),
                       ("SameStep", "VectorStaggeredCounterSameStep")):
    IDS[_mode] = f"rlengine-test/StaggeredCounter{_mode}-v0"
    if IDS[_mode] not in gymnasium.registry:
        gymnasium.register(id=IDS[_mode], entry_point=f"{__name__}:StaggeredCounter",
                           vector_entry_point=f"{__name__}:{_vector}")
