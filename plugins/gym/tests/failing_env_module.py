"""A Gymnasium env that raises at a chosen step, for the async driver's error tests (no TF import)."""

import gymnasium
from gymnasium.envs.classic_control.cartpole import CartPoleEnv

FAILING_ID = "rlengine_test/FailingCartPole-v0"


class FailingCartPole(CartPoleEnv):
    def __init__(self, fail_at: int = 10, render_mode=None):
        super().__init__(render_mode=render_mode)
        self.fail_at, self.steps = fail_at, 0

    def step(self, action):
        self.steps += 1
        if self.steps == self.fail_at:
            raise RuntimeError(f"FailingCartPole breaks at step {self.steps} as asked")
        return super().step(action)


gymnasium.register(id=FAILING_ID, entry_point=f"{__name__}:FailingCartPole", max_episode_steps=500)
