"""train.device and train.actor_device, tested with TensorFlow logical devices: this machine's one CPU split into
three, so the learner, the actors and the host are three devices as they would be on a GPU machine."""

import json
import subprocess
import sys

import pytest

from rlengine.errors import ConfigError
from rlengine.run.engine import Engine
from rlengine.testing import testing_plugin, tiny_config

# Runs in a fresh process: logical devices can only be configured before TensorFlow's runtime starts.
_PLACED_RUN = """
import json, sys
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 3)
import rlengine
from rlengine.testing import testing_plugin, tiny_config

seen = {}


def placed_ops(function, *args):
    # (op type, device) of every op the function placed explicitly, loop bodies included
    graph_def = function.get_concrete_function(*args).graph.as_graph_def()
    nodes = [*graph_def.node, *(n for f in graph_def.library.function for n in f.node_def)]
    return sorted({(n.op, n.device) for n in nodes if n.device})


class Watch:
    @rlengine.hookimpl
    def rlengine_train_end(self, run, error):
        parts, pipeline = run.internals, run.pipeline
        seen["algorithm"] = sorted({v.device for v in parts.algorithm.variables})
        seen["replay"] = sorted({v.device for v in parts.replay.variables})
        seen["iteration ops"] = placed_ops(pipeline.iterate_in_graph, pipeline.carry, pipeline.warming_up[False],
                                           pipeline.num_updates)


config = tiny_config(sys.argv[1], algorithm=sys.argv[2], num_env_steps=48, eval_interval=2,
                     device="/CPU:1", actor_device="/CPU:2")
result = rlengine.Engine(config, extra_plugins=[("testing", testing_plugin()), ("watch", Watch())]).train()
seen["env_steps"] = result.env_steps
print(json.dumps(seen))
"""


def placed_run(tmp_path, algorithm):
    out = subprocess.run([sys.executable, "-c", _PLACED_RUN, str(tmp_path / "run"), algorithm],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.thorough  # the root suite leaves it out for time; this package's tox env runs it
def test_off_policy_learner_replay_and_actors_go_where_they_are_told(tmp_path):
    seen = placed_run(tmp_path, "toy-q")
    assert seen["env_steps"] == 48
    assert seen["algorithm"] and all(d.endswith("CPU:1") for d in seen["algorithm"]), seen
    assert seen["replay"] and all(d.endswith("CPU:0") for d in seen["replay"]), seen  # host memory
    devices = {op: {d for o, d in seen["iteration ops"] if o == op} for op, _ in seen["iteration ops"]}
    # toy-q's loss, a squared error, and its SGD step (assign_add) are the learner's
    assert devices["Square"] == {"/device:CPU:1"}, devices
    assert devices["AssignAddVariableOp"] == {"/device:CPU:1"}, devices
    # toy-q's rollout draws uniform actions on the actor device (replay sampling draws on the learner's)
    assert devices["StatelessRandomUniformIntV2"] == {"/device:CPU:1", "/device:CPU:2"}, devices

def test_unknown_device_is_one_line_naming_the_key_and_the_devices(tmp_path):
    config = tiny_config(str(tmp_path / "run"), device="/GPU:0")
    with pytest.raises(ConfigError) as caught:
        Engine(config, extra_plugins=[("testing", testing_plugin())]).train()
    message = str(caught.value)
    assert "\n" not in message and "train.device = '/GPU:0'" in message and "/CPU:0" in message
    assert not (tmp_path / "run" / "checkpoints").exists()


@pytest.mark.parametrize("pipeline", ["sync", "async"])
def test_on_policy_run_with_named_devices_trains(tmp_path, pipeline):
    config = tiny_config(str(tmp_path / "run"), device="/CPU:0", actor_device="/cpu:0", pipeline=pipeline)
    config["async"] = {"num_env_threads": 2}
    result = Engine(config, extra_plugins=[("testing", testing_plugin())]).train()
    assert result.env_steps == 32 and result.eval_return is not None
