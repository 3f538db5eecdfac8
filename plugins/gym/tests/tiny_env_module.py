"""Registers small test environments on import, for the ``module:Name-v0`` id form."""

import gymnasium
import numpy as np
from gymnasium import spaces

TINY_ID = "rlengine_test/Tiny-v0"
NESTED_ID = "rlengine_test/Nested-v0"
UNPICKLABLE_ID = "rlengine_test/Unpicklable-v0"


class NestedEnv(gymnasium.Env):
    """Dict observation and Tuple action; ends after ``episode_length`` steps.

    Observation ``{"flag": Discrete(3, start=1), "pos": Box(2,)}``: ``pos`` is
    ``[t, last_box_action_sum]``, ``flag`` is the last discrete action + 1
    (1 after a reset). Action ``(Discrete(2, start=5), Box(-1, 1, (2,)))``.
    Reward: the discrete action value (5 or 6).
    """

    metadata = {"render_modes": []}

    def __init__(self, episode_length: int = 3, scale=None):
        self.episode_length = episode_length
        self.observation_space = spaces.Dict(
            {"pos": spaces.Box(-np.inf, np.inf, (2,), np.float64), "flag": spaces.Discrete(3, start=1)}
        )
        self.action_space = spaces.Tuple((spaces.Discrete(2, start=5), spaces.Box(-1.0, 1.0, (2,), np.float32)))
        self._t = 0
        self._flag = 1
        self._sum = 0.0

    def _obs(self):
        return {"pos": np.array([self._t, self._sum], np.float64), "flag": np.int64(self._flag)}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._t, self._flag, self._sum = 0, 1, 0.0
        return self._obs(), {}

    def step(self, action):
        discrete, box = action
        self._t += 1
        self._flag = int(discrete) - 5 + 1
        self._sum = float(np.sum(box))
        return self._obs(), float(discrete), self._t >= self.episode_length, False, {}


gymnasium.register(id=TINY_ID, entry_point="gymnasium.envs.classic_control.cartpole:CartPoleEnv", max_episode_steps=7)
gymnasium.register(id=NESTED_ID, entry_point=f"{__name__}:NestedEnv")
# A lambda in the kwargs: this spec cannot be pickled to worker processes.
gymnasium.register(id=UNPICKLABLE_ID, entry_point=f"{__name__}:NestedEnv", kwargs={"scale": lambda x: x})
