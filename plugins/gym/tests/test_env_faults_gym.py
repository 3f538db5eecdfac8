"""Environment faults with Gymnasium envs, in this process and in worker processes: recreated, or timed out
and terminated, without leaving a process behind."""

import os
import sys
import time

import gymnasium
import numpy as np
import pytest
from processes import worker_processes

from rlengine.collect.faults import EnvironmentTimeout
from rlengine.run.engine import Engine
from rlengine.testing import MemoryWriter, testing_plugin, tiny_config

UNROLL, COPIES = 4, 2
BUDGET = 10 * UNROLL * COPIES


RAISING_ID = "rlengine-test/Raising-v0"


class RaisingGymEnv(gymnasium.Env):
    """Raises in step ``fail_at`` of an episode while fault claims (files in ``claims``) remain."""

    observation_space = gymnasium.spaces.Box(-10.0, 10.0, (2,), np.float32)
    action_space = gymnasium.spaces.Discrete(2)

    def __init__(self, claims="", faults=0, fail_at=3, hang_at=0):
        self.claims, self.faults, self.fail_at, self.hang_at, self.t = claims, faults, fail_at, hang_at, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        if self.t == self.fail_at and self._claim():
            raise RuntimeError("injected gym fault")
        if self.t == self.hang_at:
            time.sleep(30)
        return np.full(2, self.t, np.float32), 1.0, False, self.t >= 6, {}

    def _claim(self):
        for i in range(self.faults):  # O_EXCL: each claim is taken once, across processes
            try:
                os.close(os.open(os.path.join(self.claims, f"fault-{i}"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
                return True
            except FileExistsError:
                continue
        return False


@pytest.fixture(scope="module")
def raising_gym_id():
    import cloudpickle

    # Worker processes rebuild the class from its pickled code instead of importing this test module.
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    if RAISING_ID not in gymnasium.registry:
        gymnasium.register(RAISING_ID, entry_point=RaisingGymEnv)
    yield RAISING_ID
    cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def _gym_engine(tmp_path, env_id, vectorization, make_kwargs, **train):
    raw = tiny_config(str(tmp_path), env=env_id, env_provider="gym", num_envs=COPIES, unroll_length=UNROLL,
                      num_env_steps=BUDGET, eval_interval=0, **train)
    raw["gym"] = {"vectorization": vectorization, "make_kwargs": {"claims": str(tmp_path), **make_kwargs}}
    return Engine(raw, extra_plugins=[("testing", testing_plugin())])


def _start_forkserver(env_id):
    """Start the forkserver before counting processes: it outlives every env by design."""
    from rlengine_gym import GymEnvironment

    GymEnvironment(env_id, 1, 0, config={"vectorization": "async"}).close()


@pytest.mark.parametrize("vectorization", ["sync", "async"])
def test_gym_env_that_raises_is_recreated_without_leaking_processes(tmp_path, raising_gym_id, vectorization):
    if vectorization == "async":
        _start_forkserver(raising_gym_id)
    before = worker_processes()
    faults = 2
    result = _gym_engine(tmp_path, raising_gym_id, vectorization, {"faults": faults, "fail_at": 3}).train()
    assert result.env_steps == BUDGET
    last = MemoryWriter.last.rows[-1]
    # in process the first failing copy stops the batched step; worker processes all fail at once
    assert 1 <= last["train/env_restarts"] <= faults
    assert last["train/dropped_unrolls"] == last["train/env_restarts"]
    assert worker_processes() <= before, "worker processes of a closed environment are still alive"


def test_hung_gym_worker_process_times_out_naming_the_env_and_is_terminated(tmp_path, raising_gym_id):
    _start_forkserver(raising_gym_id)
    before = worker_processes()
    engine = _gym_engine(tmp_path, raising_gym_id, "async", {"hang_at": 5}, env_step_timeout=1.0)
    start = time.perf_counter()
    with pytest.raises(EnvironmentTimeout, match=f"environment '{RAISING_ID}' .*did not answer step.. within 1 s"):
        engine.train()
    assert time.perf_counter() - start < 20  # the hang lasts 30 s
    assert worker_processes() <= before, "the hung worker processes were not terminated"


def test_a_worker_killed_by_a_signal_is_named_with_it_and_the_others_are_terminated():
    import signal

    from rlengine_gym import GymEnvironment
    from rlengine_gym.worker_faults import EnvWorkerDied

    _start_forkserver("CartPole-v1")
    before = worker_processes()
    env = GymEnvironment("CartPole-v1", 3, 0, first_env_id=4, config={"vectorization": "async"})
    env.reset()
    os.kill(env._venv.processes[1].pid, signal.SIGKILL)  # what the kernel's OOM killer does
    with pytest.raises(EnvWorkerDied, match=r"^env worker 1 of 'CartPole-v1' \(env_id 5\) was killed by SIGKILL$"):
        env.step(np.zeros(3, np.int64))
    env.close()
    assert worker_processes() <= before, "the surviving workers of the broken environment are still alive"
