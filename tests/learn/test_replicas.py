"""train.learner_devices: each minibatch split over several devices learns what one device does.

TensorFlow fixes its logical devices when it starts, so the runs on two logical CPUs happen in
one subprocess that configures them first, and the tests read what it printed.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from rlengine.errors import ConfigError
from rlengine.run.engine import Engine
from rlengine.testing import testing_plugin, tiny_config

TWO_CPUS = textwrap.dedent('''
    import json, sys
    import tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    from rlengine import hookimpl
    from rlengine.errors import ConfigError
    from rlengine.run.engine import Engine
    from rlengine.testing import MemoryWriter, testing_plugin, tiny_config
    from rlengine.testing.kit import ToyQAlgorithm

    class PrioritizedToyQ(ToyQAlgorithm):
        prioritized_replay = True  # its per-row priorities come back from the devices in row order

    class Prioritized:
        @hookimpl
        def rlengine_register_algorithms(self, register):
            register("toy-q-prioritized", PrioritizedToyQ)

    TWO = ["/CPU:0", "/CPU:1"]
    root, out = sys.argv[1], {}

    def train(name, sections=(), **train):
        config = tiny_config(f"{root}/{name}", num_env_steps=48, eval_interval=0, checkpoint_interval=2, **train)
        config.update(sections)
        engine = Engine(config, extra_plugins=[("testing", testing_plugin()), ("prioritized", Prioritized())])
        engine.train()
        out[name] = {"losses": [row["loss/total"] for row in MemoryWriter.last.rows if "loss/total" in row],
                     "skipped": MemoryWriter.last.rows[-1].get("train/skipped_updates")}
        return engine

    for algorithm in ["toy", "toy-q"]:
        train(f"{algorithm}-one", algorithm=algorithm)
        engine = train(f"{algorithm}-two", algorithm=algorithm, learner_devices=TWO)
        out[f"{algorithm}-two"]["eval"] = engine.evaluate(2)["eval/episodes"]
    train("toy-q-jit", algorithm="toy-q", learner_devices=TWO, jit_compile=True)
    train("toy-q-async", algorithm="toy-q", learner_devices=TWO, pipeline="async",
          sections={"async": {"num_env_threads": 2}})
    train("toy-q-prioritized", algorithm="toy-q-prioritized", learner_devices=TWO)
    try:
        train("toy-q-odd", algorithm="toy-q", learner_devices=["/CPU:0", "/CPU:1", "/CPU:0"])
    except ConfigError as error:
        out["duplicate"] = str(error)
    print(json.dumps(out))
''')


@pytest.fixture(scope="module")
def two_cpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("replicas")
    done = subprocess.run([sys.executable, "-c", TWO_CPUS, str(root)], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1]), done.stderr


@pytest.mark.thorough  # the root suite leaves it out for time; this package's tox env runs it
@pytest.mark.parametrize("algorithm", ["toy", "toy-q"])
def test_two_devices_take_the_steps_one_device_takes(two_cpus, algorithm):
    runs, _ = two_cpus
    one, two = runs[f"{algorithm}-one"]["losses"], runs[f"{algorithm}-two"]["losses"]
    assert len(one) == len(two) > 1
    assert two == pytest.approx(one, rel=1e-5, abs=1e-7)  # same seed, same data: shard means average to the mean
    assert runs[f"{algorithm}-two"]["eval"] == 2  # evaluated on one device from the mirrored checkpoint


@pytest.mark.thorough  # the root suite leaves it out for time; this package's tox env runs it
@pytest.mark.parametrize("variant", ["jit", "async", "prioritized"])
def test_two_devices_train_with_the_other_switches(two_cpus, variant):
    runs, _ = two_cpus
    run = runs[f"toy-q-{variant}"]
    assert len(run["losses"]) > 1 and run["skipped"] == 0
    assert run["losses"][-1] < run["losses"][0]  # it learns the rewards of the toy's two actions


@pytest.mark.thorough  # the root suite leaves it out for time; this package's tox env runs it
def test_a_device_named_twice_is_refused_naming_the_key(two_cpus):
    runs, stderr = two_cpus
    assert "train.learner_devices" in runs["duplicate"] and "twice" in runs["duplicate"]
    assert "MirroredStrategy eagerly" not in stderr  # TensorFlow's advice is not the user's business


def test_an_absent_device_is_refused_before_anything_is_built(tmp_path):
    config = tiny_config(str(tmp_path / "run"), learner_devices=["/CPU:0", "/CPU:7"])
    with pytest.raises(ConfigError, match=r"train.learner_devices = '/CPU:7' is not a device of this machine"):
        Engine(config, extra_plugins=[("testing", testing_plugin())]).train()
    assert not (tmp_path / "run").exists()


def test_one_place_for_the_learner(tmp_path):
    config = tiny_config(str(tmp_path / "run"), device="/CPU:0", learner_devices=["/CPU:0"])
    with pytest.raises(ConfigError, match="set only one of them"):
        Engine(config, extra_plugins=[("testing", testing_plugin())]).train()
