"""train.learner_workers: several processes average every update's gradients (TensorFlow's multi-worker
strategy), and take what a single learner takes on all their rows together.

TensorFlow joins workers only before a process's first op, so each worker is a subprocess, started
side by side on ports of this machine; the tests read what they printed and what they wrote.
"""

import json
import os
import socket
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from rlengine.errors import ConfigError
from rlengine.run.engine import Engine
from rlengine.testing import testing_plugin, tiny_config

#: one gradient step of a linear model on this worker's half of a fixed batch
FIXED_BATCH = textwrap.dedent('''
    import json, sys, types
    import numpy as np
    import tensorflow as tf
    from rlengine.api.data import LossInfo
    from rlengine.learn.replicas import worker_replicas

    index, workers = int(sys.argv[1]), json.loads(sys.argv[2])
    replicas = worker_replicas(types.SimpleNamespace(learner_workers=workers, worker_index=index))
    x = np.random.default_rng(0).normal(size=(8, 3)).astype(np.float32)
    y = x @ np.array([1.0, -2.0, 0.5], np.float32) + 0.1
    with replicas.scope():
        w = tf.Variable(np.full(3, 0.3 + index, np.float32))  # the chief's value is broadcast to every worker
    half = slice(4 * index, 4 * index + 4)

    @tf.function
    def step(x, y):
        def gradients_of(rows):
            xs, ys = rows
            with tf.GradientTape() as tape:
                error = tf.linalg.matvec(xs, w) - ys
                loss = tf.reduce_mean(error ** 2)
            return LossInfo(loss, {"mse": loss}, error), [(tape.gradient(loss, w), w)]
        loss_info, grads_and_vars = replicas.loss_and_gradients(gradients_of, (x, y))
        w.assign_sub(0.1 * grads_and_vars[0][0])
        return loss_info
    info = step(tf.constant(x[half]), tf.constant(y[half]))
    print(json.dumps({"w": w.numpy().tolist(), "loss": float(info.loss), "rows": info.priority.numpy().tolist()}))
''')

#: whole runs of the testing kit's algorithms on this worker, then one resumed with a larger budget
RUNS = textwrap.dedent('''
    import json, sys
    from rlengine.run.engine import Engine
    from rlengine.testing import MemoryWriter, testing_plugin, tiny_config

    from rlengine import hookimpl

    root, index, workers = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
    out = {}

    class StopsWorkerOne:  # worker 1 alone asks to stop after iteration 3
        @hookimpl
        def rlengine_iteration_end(self, run, iteration, metrics):
            if index == 1 and iteration == 3:
                run.request_stop("worker 1 had enough")

    def train(name, force=False, plugins=(), **train):
        config = tiny_config(f"{root}/{name}", learner_workers=workers, worker_index=index, checkpoint_interval=2,
                             **train)
        engine = Engine(config, extra_plugins=[("testing", testing_plugin()), *plugins], force=force)
        result = engine.train()
        out[name] = {"root_dir": engine.config.train.root_dir, "seed": engine.config.train.seed,
                     "env_steps": result.env_steps, "evaluations": len(result.eval_history),
                     "stop_reason": result.stop_reason}
    train("toy", algorithm="toy")
    train("toy-q", algorithm="toy-q")
    train("toy", force=True, algorithm="toy", num_env_steps=48)  # resumes at 32
    train("stopped", algorithm="toy", num_env_steps=64, plugins=[("stops", StopsWorkerOne())])
    print(json.dumps(out))
''')

#: worker 1 dies (os._exit, as a kill would end it) after iteration 3; the chief reports what it raised
LOSES_ONE = textwrap.dedent('''
    import json, os, sys
    from rlengine import hookimpl
    from rlengine.run.engine import Engine
    from rlengine.testing import testing_plugin, tiny_config

    root, index, workers = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])

    class Dies:
        @hookimpl
        def rlengine_checkpoint_saved(self, run, iteration, path):
            if index == 1 and iteration == 2:
                os._exit(3)

    config = tiny_config(f"{root}/run", algorithm="toy", learner_workers=workers, worker_index=index,
                         num_env_steps=4000, checkpoint_interval=2, eval_interval=0)
    try:
        Engine(config, extra_plugins=[("testing", testing_plugin()), ("dies", Dies())]).train()
        print(json.dumps({"error": None}))
    except Exception as error:
        print(json.dumps({"error": str(error), "type": type(error).__name__}))
''')


def free_ports(count: int) -> list:
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("localhost", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def side_by_side(script: str, argv_of, ok_codes=(0,)) -> list:
    """Each worker's printed JSON, the two started at once on fresh ports (``argv_of(index, workers)``: its
    arguments)."""
    workers = [f"localhost:{port}" for port in free_ports(2)]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    processes = [subprocess.Popen([sys.executable, "-c", script, *argv_of(index, workers)], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=env) for index in range(2)]
    outputs = [p.communicate(timeout=600) for p in processes]
    for p, (_, err) in zip(processes, outputs):
        assert p.returncode in ok_codes, err[-3000:]
    return [json.loads(out.splitlines()[-1]) if out.strip() else None for out, _ in outputs]


@pytest.mark.thorough  # two processes that import TensorFlow: the package's tox env runs it
def test_two_workers_take_the_step_one_learner_takes_on_both_halves_of_a_batch():
    chief, worker = side_by_side(FIXED_BATCH, lambda index, workers: [str(index), json.dumps(workers)])
    x = np.random.default_rng(0).normal(size=(8, 3)).astype(np.float32)
    y = x @ np.array([1.0, -2.0, 0.5], np.float32) + 0.1
    w = np.full(3, 0.3, np.float32)  # the chief's initial value
    error = x @ w - y
    expected = w - 0.1 * (2 * x.T @ error / len(x))
    np.testing.assert_allclose(chief["w"], expected, atol=1e-5)
    assert chief["w"] == worker["w"]  # the same step on both
    assert chief["loss"] == pytest.approx(float(np.mean(error ** 2)), rel=1e-5)  # the mean of the halves' means
    np.testing.assert_allclose(chief["rows"], error[:4], atol=1e-5)  # per-row values: each worker's own rows
    np.testing.assert_allclose(worker["rows"], error[4:], atol=1e-5)


@pytest.mark.thorough
def test_two_workers_train_resume_and_end_with_the_same_weights(tmp_path):
    import tensorflow as tf

    chief, worker = side_by_side(RUNS, lambda index, workers: [str(tmp_path), str(index), json.dumps(workers)])
    assert chief["toy"]["root_dir"] == str(tmp_path / "toy")
    assert worker["toy"]["root_dir"] == str(tmp_path / "toy") + "-worker-1"
    assert worker["toy"]["seed"] == chief["toy"]["seed"] + 10007  # its own data
    for name in ("toy", "toy-q"):
        assert chief[name]["env_steps"] == worker[name]["env_steps"] == (48 if name == "toy" else 32)
        for run in (chief[name], worker[name]):  # every worker evaluates (the chief's decides a stop)
            # toy resumed at iteration 4 of 6: one evaluation in its second life, where a fresh run has three
            assert run["evaluations"] == (1 if name == "toy" else 2)
        newest = {}
        for side in (chief, worker):
            directory = os.path.join(side[name]["root_dir"], "checkpoints")
            last = max(int(f[5:-6]) for f in os.listdir(directory) if f.startswith("ckpt-") and f.endswith(".index"))
            reader = tf.train.load_checkpoint(os.path.join(directory, f"ckpt-{last}"))
            newest[id(side)] = (last, {k: reader.get_tensor(k) for k in reader.get_variable_to_shape_map()
                                       if k.startswith("algorithm/") and "OPTIMIZER" not in k})
        (chief_last, chief_values), (worker_last, worker_values) = newest.values()
        assert chief_last == worker_last and chief_values.keys() == worker_values.keys() and chief_values
        for key, value in chief_values.items():  # every update averaged over both: the same weights, bit for bit
            np.testing.assert_array_equal(value, worker_values[key], err_msg=key)
    # a stop on one worker ends both after that iteration (3 of 8: 24 env steps)
    assert chief["stopped"]["env_steps"] == worker["stopped"]["env_steps"] == 24
    assert worker["stopped"]["stop_reason"] == "worker 1 had enough"
    assert chief["stopped"]["stop_reason"] == "another learner worker stopped"


@pytest.mark.parametrize("settings, culprit", [
    ({"learner_workers": ["localhost:1"]}, "names one worker: name two or more"),
    ({"learner_workers": ["localhost", "localhost:2"]}, "'localhost' is not host:port"),
    ({"learner_workers": ["localhost:1", "localhost:1"]}, "names a worker twice"),
    ({"learner_workers": ["localhost:1", "localhost:2"], "worker_index": 2}, "train.worker_index = 2 is not a place"),
    ({"learner_workers": ["localhost:1", "localhost:2"], "learner_devices": ["/CPU:0", "/CPU:1"]},
     "train.learner_workers and train.learner_devices both"),
    ({"learner_workers": ["localhost:1", "localhost:2"], "pipeline": "async", "num_envs": 4},
     "needs train.pipeline = 'sync'"),
    ({"learner_workers": ["localhost:1", "localhost:2"], "root_dir": ""}, "needs train.root_dir (--root-dir)"),
])
def test_worker_settings_that_cannot_run_are_one_line_before_anything_starts(tmp_path, settings, culprit):
    config = tiny_config(str(tmp_path / "run"))
    config["train"].update(settings)
    with pytest.raises(ConfigError) as caught:
        Engine(config, extra_plugins=[("testing", testing_plugin())])
    assert culprit in str(caught.value) and "\n" not in str(caught.value)
    assert not (tmp_path / "run").exists()


@pytest.mark.thorough
def test_a_lost_worker_stops_the_others_in_one_line_and_their_checkpoints_stay(tmp_path):
    chief, dead = side_by_side(LOSES_ONE, lambda index, workers: [str(tmp_path), str(index), json.dumps(workers)],
                               ok_codes=(0, 3))
    assert dead is None  # it died without a word
    assert chief["type"] == "WorkerError" and "\n" not in chief["error"]
    assert chief["error"].startswith("train.learner_workers: another learner worker stopped answering")
    assert "starting every worker again with its own command resumes the run" in chief["error"]
    assert (tmp_path / "run" / "checkpoints" / "ckpt-2.index").exists()  # the chief's checkpoints are kept
