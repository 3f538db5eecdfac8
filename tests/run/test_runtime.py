"""TensorFlow's pools are sized when a run is built: the inter-op pool for its pipeline, the intra-op pool
for its observations (in fresh processes: the test process's own pools are fixed already)."""

import os
import subprocess
import sys

import pytest
import tensorflow as tf

from rlengine.config.loading import build_config
from rlengine.errors import ConfigError
from rlengine.run.process.runtime import intra_op_threads_for

BUILD_ASYNC = """
import rlengine, sys
from rlengine.run.engine import Engine
from rlengine.errors import ConfigError
from rlengine.run.process.runtime import inter_op_threads
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


@pytest.mark.thorough  # the root suite leaves it out for time; this package's tox env runs it
def test_building_an_async_run_sizes_the_pool_for_its_threads(tmp_path):
    out = run(BUILD_ASYNC, tmp_path)
    assert "ConfigError" not in out
    assert out.strip().endswith("pool 4")  # 3 env threads stepping at once + 1 for the actors and the learner


@pytest.mark.thorough  # the root suite leaves it out for time; this package's tox env runs it
def test_a_sync_run_keeps_the_default_pool(tmp_path):
    code = BUILD_ASYNC.replace('pipeline="async"', 'pipeline="sync"').replace('cfg["async"] =', "_ =")
    out = run(code, tmp_path)
    assert out.strip().endswith(f"pool {os.cpu_count()}")


@pytest.mark.thorough  # the root suite leaves it out for time; this package's tox env runs it
def test_a_pool_fixed_too_small_before_the_run_is_one_line_naming_the_setting(tmp_path):
    code = "import tensorflow as tf; tf.constant(1.0) + 1.0  # starts the runtime with the default pool\n" + BUILD_ASYNC
    out = run(code, tmp_path)
    if os.cpu_count() >= 4:
        pytest.skip("the default pool (one thread per core) is large enough here: nothing to refuse")
    line = next(line for line in out.splitlines() if line.startswith("ConfigError"))
    assert "TF_NUM_INTEROP_THREADS=4" in line and "needs 4 threads" in line
    assert not (tmp_path / "run").exists()  # refused before anything was written


# -- the intra-op pool (train.intra_op_threads) ------------------------------------------------------------------
TRAIN = """
import sys, tensorflow as tf
from rlengine.run.engine import Engine
from rlengine.testing import testing_plugin, tiny_config
cfg = tiny_config(sys.argv[1], eval_interval=0)
cfg["train"].update(eval(sys.argv[2]))
Engine(cfg, extra_plugins=[("testing", testing_plugin())]).train()
print("intra", tf.config.threading.get_intra_op_parallelism_threads())
"""


def train_in_fresh_process(tmp_path, settings: str, prefix: str = "", suffix: str = "") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS")}
    out = subprocess.run([sys.executable, "-c", prefix + TRAIN + suffix, str(tmp_path / "run"), settings], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out


@pytest.mark.thorough  # the root suite leaves it out for time; this package's tox env runs it
def test_auto_gives_a_run_with_vector_observations_one_intra_op_thread_before_its_first_op(tmp_path):
    # set_intra_op_parallelism_threads raises once the runtime started: 1 here means it was set before
    assert train_in_fresh_process(tmp_path, "{}").stdout.split()[-1] == "1"


@pytest.mark.thorough  # the root suite leaves it out for time; this package's tox env runs it
def test_a_number_the_started_runtime_cannot_take_is_one_warning_and_the_run_trains(tmp_path):
    more = os.cpu_count() + 1  # not the default pool's size (one per core), which would need no change
    out = train_in_fresh_process(tmp_path, f"{{'intra_op_threads': {more}}}",
                                 prefix="import tensorflow as tf; tf.constant(1)\n")
    warnings = [line for line in out.stderr.splitlines() if "train.intra_op_threads" in line]
    assert len(warnings) == 1 and f"TF_NUM_INTRAOP_THREADS={more}" in warnings[0], out.stderr
    assert out.stdout.split()[-1] == "0"  # the runtime's default pool, kept; train() returned before the print


@pytest.mark.parametrize("setting, observation, expected", [
    ("auto", tf.TensorSpec([4], tf.float32), 1),  # an MLP's vector
    ("auto", tf.TensorSpec([], tf.int32), 1),
    ("auto", {"image": tf.TensorSpec([36, 36, 3], tf.uint8), "vector": tf.TensorSpec([2])}, 0),  # convolutions
    (3, tf.TensorSpec([4], tf.float32), 3),
    (0, tf.TensorSpec([4], tf.float32), 0),
])
def test_the_intra_op_pool_asked_for(setting, observation, expected, monkeypatch):
    monkeypatch.delenv("TF_NUM_INTRAOP_THREADS", raising=False)
    assert intra_op_threads_for(setting, observation) == expected


def test_auto_keeps_one_thread_for_vectors_within_a_share_of_the_cores_set_in_the_environment(monkeypatch):
    monkeypatch.setenv("TF_NUM_INTRAOP_THREADS", "4")  # as `rlengine train --seeds` gives its processes
    assert intra_op_threads_for("auto", tf.TensorSpec([4], tf.float32)) == 1
    assert intra_op_threads_for("auto", tf.TensorSpec([84, 84, 4], tf.uint8)) == 0  # TensorFlow's: the variable's 4


@pytest.mark.parametrize("value", [-1, "two", True])
def test_a_bad_intra_op_setting_is_one_line_naming_the_key(value):
    with pytest.raises(ConfigError, match="intra_op_threads"):
        build_config({"train": {"intra_op_threads": value}}, {})


# -- Grappler: one pass, no GPU passes on a CPU ----------------------------------------------------------------------------------------------
PASSES = """
import threading
from tensorflow.core.protobuf import config_pb2
from tensorflow.python.eager import context

def passes():
    config = config_pb2.ConfigProto()
    config.ParseFromString(context.context().function_call_options.config_proto_serialized)
    rewrites = config.graph_options.rewrite_options  # 0 for each: TensorFlow's default (two passes, both on)
    return f"{rewrites.meta_optimizer_iterations},{rewrites.layout_optimizer},{rewrites.memory_optimization}"

seen = [passes()]
thread = threading.Thread(target=lambda: seen.append(passes()))  # threads read the options at their first call
thread.start(); thread.join()
print("passes", *seen)
"""


@pytest.mark.thorough  # the root suite leaves it out for time; this package's tox env runs it
def test_the_run_has_grappler_optimize_its_functions_in_one_pass_without_gpu_passes_on_every_thread(tmp_path):
    out = train_in_fresh_process(tmp_path, "{}", prefix="import tensorflow as tf; tf.function(tf.abs)(1.0)\n",
                                 suffix=PASSES)
    # the caller's function ran first, so the main thread had cached TensorFlow's default already
    passes = next(line for line in out.stdout.splitlines() if line.startswith("passes"))
    # RewriterConfig.ONE; without a GPU also the layout optimizer OFF and memory optimization NO_MEM_OPT
    expected = "1,0,0" if tf.config.list_physical_devices("GPU") else "1,2,1"
    assert passes == f"passes {expected} {expected}", out.stdout


def test_the_warm_up_leaves_the_global_seeds_sequence_alone(monkeypatch):
    """It runs in a process's first run only: an op seed it drew would give that run other initial weights."""
    from rlengine.run.process import runtime

    tf.random.set_seed(5)
    expected = tf.random.normal([3]).numpy()
    monkeypatch.setattr(runtime, "_warmed_up", False)
    tf.random.set_seed(5)
    runtime.warm_up()
    assert (tf.random.normal([3]).numpy() == expected).all()
