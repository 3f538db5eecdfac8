"""Run as a script by test_gym_env.py: async workers and the main module.

Prints one line per check: the CartPole workers must not load TensorFlow
(the main module, which does, is not re-run in them), and an env class
defined in this main module must still work in worker processes.
"""

import gymnasium
import numpy as np

from rlengine_gym.environment import GymConfig, GymEnvironment


class MainModuleEnv(gymnasium.Env):
    def __init__(self):
        self.observation_space = gymnasium.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.action_space = gymnasium.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        return np.full(1, 0.5, np.float32), 1.0, True, False, {}


def worker_has_tensorflow(env):
    return any("tensorflow" in open(f"/proc/{p.pid}/maps").read() for p in env._venv.processes)


def main():
    async_config = GymConfig(vectorization="async")
    with GymEnvironment("CartPole-v1", 2, 0, config=async_config) as env:
        env.reset()
        env.step(np.zeros(2, np.int32))
        print("cartpole_workers_tensorflow", worker_has_tensorflow(env))
    gymnasium.register(id="rlengine_test/MainModule-v0", entry_point=MainModuleEnv)
    # One copy: its worker must re-run this module, TensorFlow import included.
    with GymEnvironment("rlengine_test/MainModule-v0", 1, 0, config=async_config) as env:
        env.reset()
        ts = env.step(np.zeros(1, np.int32))
        print("main_module_env", ts.observation[:, 0].tolist(), ts.step_type.tolist())


if __name__ == "__main__":
    main()
