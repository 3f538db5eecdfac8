"""TensorFlow's inter-op pool is sized when a run is built, for its driver (in fresh processes:
the test process's own pool is fixed already)."""

import os
import subprocess
import sys

import pytest

BUILD_ASYNC = """
import rlengine, sys
from rlengine.run.engine import Engine
from rlengine.errors import ConfigError
from rlengine.run.runtime import inter_op_threads
from rlengine.testing import testing_plugin, tiny_config
cfg = tiny_config(sys.argv[1], num_envs=6, pipeline="async")
cfg["async"] = {"num_env_threads": 3, "num_actor_threads": 2}
try:
    Engine(cfg, extra_plugins=[("testing", testing_plugin())])
except ConfigError as exc:
    print("ConfigError:", exc)
print("pool", inter_op_threads())
"""


def run(code: str, tmp_path) -> str:
    env = {k: v for k, v in os.environ.items() if k != "TF_NUM_INTEROP_THREADS"}
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "run")], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_building_an_async_run_sizes_the_pool_for_its_threads(tmp_path):
    out = run(BUILD_ASYNC, tmp_path)
    assert "ConfigError" not in out
    assert out.strip().endswith("pool 4")  # 3 env threads stepping at once + 1 for the actors and the learner


def test_a_sync_run_keeps_the_default_pool(tmp_path):
    code = BUILD_ASYNC.replace('pipeline="async"', 'pipeline="sync"').replace('cfg["async"] =', "_ =")
    out = run(code, tmp_path)
    assert out.strip().endswith(f"pool {os.cpu_count()}")


def test_a_pool_fixed_too_small_before_the_run_is_one_line_naming_the_setting(tmp_path):
    code = "import tensorflow as tf; tf.constant(1.0) + 1.0  # starts the runtime with the default pool\n" + BUILD_ASYNC
    out = run(code, tmp_path)
    if os.cpu_count() >= 4:
        pytest.skip("the default pool (one thread per core) is large enough here: nothing to refuse")
    line = next(line for line in out.splitlines() if line.startswith("ConfigError"))
    assert "TF_NUM_INTEROP_THREADS=4" in line and "needs 4 threads" in line
    assert not (tmp_path / "run").exists()  # refused before anything was written
