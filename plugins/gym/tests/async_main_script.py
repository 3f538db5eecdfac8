"""Run as a script by test_gym_env.py: async workers and the main module.

Worker processes must not re-run this main module (for the ``rlengine``
command it would import TensorFlow in every worker) unless the env needs it:
an env class defined here must still work in worker processes. Each re-run
prints ``main_rerun``.
"""

import gymnasium
import numpy as np

if __name__ == "__mp_main__":
    print("main_rerun", flush=True)


class MainModuleEnv(gymnasium.Env):
    def __init__(self):
        self.observation_space = gymnasium.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.action_space = gymnasium.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        return np.full(1, 0.5, np.float32), 1.0, True, False, {}


def main():
    from rlengine_gym.environment import GymConfig, GymEnvironment

    async_config = GymConfig(vectorization="async")
    with GymEnvironment("CartPole-v1", 2, 0, config=async_config) as env:
        env.reset()
        env.step(np.zeros(2, np.int32))
        print("cartpole_done", flush=True)
    gymnasium.register(id="rlengine_test/MainModule-v0", entry_point=MainModuleEnv)
    with GymEnvironment("rlengine_test/MainModule-v0", 1, 0, config=async_config) as env:
        env.reset()
        ts = env.step(np.zeros(1, np.int32))
        print("main_module_env", ts.observation[:, 0].tolist(), ts.step_type.tolist(), flush=True)


if __name__ == "__main__":
    main()
