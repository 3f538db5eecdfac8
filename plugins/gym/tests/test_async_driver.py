"""The async driver on Gymnasium envs in worker processes: errors name the thread, nothing is left behind."""

import threading

import failing_env_module
import pytest
from processes import worker_processes

from rlengine.errors import WorkerError
from rlengine.run.engine import Engine
from rlengine.testing import testing_plugin, tiny_config


def test_worker_processes_sees_the_workers_of_a_subprocess_env():
    from rlengine_gym.environment import GymConfig, GymEnvironment

    before = worker_processes()
    env = GymEnvironment("CartPole-v1", 2, 0, config=GymConfig(vectorization="async"))
    try:
        assert len(worker_processes() - before) == 2
    finally:
        env.close()
    assert worker_processes() <= before


@pytest.mark.parametrize("vectorization", ["sync", "async"])
def test_an_env_error_in_a_worker_process_stops_the_async_run(tmp_path, vectorization):
    before = worker_processes()
    cfg = tiny_config(str(tmp_path / "run"), env=f"failing_env_module:{failing_env_module.FAILING_ID}",
                      num_envs=4, num_env_steps=100_000, unroll_length=8, eval_interval=0, pipeline="async",
                      max_env_restarts=0)
    cfg["async"] = {"num_env_threads": 2}
    cfg["gym"] = {"vectorization": vectorization, "make_kwargs": {"fail_at": 30}}
    engine = Engine(cfg, extra_plugins=[("testing", testing_plugin())])
    with pytest.raises(WorkerError, match=r"env thread \d .*FailingCartPole.*breaks at step 30"):
        engine.train()
    assert [t.name for t in threading.enumerate() if t.name.startswith(("env thread", "actor thread"))] == []
    assert worker_processes() <= before  # every worker process of both env threads is gone
