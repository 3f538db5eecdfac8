"""``rlengine export``: the SavedModel gives the evaluator's greedy actions in a process without rlengine.

Each run is trained for a few iterations, exported, and driven in process
by the evaluator's greedy step on its evaluation environments; the
recorded observations then go to one subprocess where importing rlengine,
its plugins, TFP, tf-keras and Gymnasium fails, which loads every model with
TensorFlow alone and returns its actions.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from rlengine_tools.export import export_run
from rlengine_tools.rundir import open_run

from rlengine import Engine, cli
from rlengine.collect.policy_step import greedy

pytestmark = pytest.mark.first_party

EXAMPLES = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, os.pardir, "examples")
NUM_STEPS = 40  # greedy steps per run in the environment (and as many on random observations)
NUM_COPIES = 3  # evaluation environment copies, the batch the models are called with
BLOCKED = ("rlengine", "rlengine_gym", "rlengine_algorithms", "rlengine_transformers", "rlengine_writers",
           "rlengine_tools", "tensorflow_probability", "tf_keras", "gymnasium")

RUNS = {
    # discrete actions, stateless
    "ppo-cartpole": ("ppo_cartpole.toml", ["train.num_env_steps=256"]),
    # continuous actions, with the normaliser's restored statistics inside the model
    "ppo-pendulum": ("ppo_pendulum.toml", ["train.num_envs=2", "train.unroll_length=64", "train.num_env_steps=128",
                                           "ppo.num_epochs=2"]),
    # stateful twice over: the LSTM's state and the frame stack's history
    "ppo-lstm-framestack": ("ppo_lstm_cartpole_novelocity.toml",
                            ["train.num_env_steps=256", "train.num_envs=4", "train.unroll_length=64",
                             'train.transformers=["frame_stack"]', "frame_stack.num_frames=3", "ppo.num_epochs=1",
                             "ppo.lstm_size=16"]),
}

# Runs with no rlengine importable: every model is loaded and called with TensorFlow only.
LOADER = """
import json, sys
for name in {blocked!r}:
    sys.modules[name] = None  # "import name" now raises ImportError
try:
    import rlengine  # noqa: F401
except ImportError:
    pass
else:
    sys.exit("rlengine is importable")
import numpy as np
import tensorflow as tf

for model_dir, inputs, outputs in json.loads(sys.argv[1]):
    policy = tf.saved_model.load(model_dir)
    data = np.load(inputs)
    actions = []
    if hasattr(policy, "step"):
        state = policy.initial_state(data["observation"].shape[1])
        for observation, step_type in zip(data["observation"], data["step_type"]):
            out = policy.step(observation, step_type, state)
            actions.append(out["action"].numpy())
            state = out["state"]
    else:
        actions = [policy.action(observation).numpy() for observation in data["observation"]]
    np.save(outputs, np.stack(actions))
""".format(blocked=BLOCKED)


# Runs with neither rlengine nor TensorFlow importable: every policy.tflite is called with LiteRT and NumPy.
LITE_LOADER = """
import json, os, sys
for name in {blocked!r} + ("tensorflow",):
    sys.modules[name] = None  # "import name" now raises ImportError
import numpy as np
from ai_edge_litert.interpreter import Interpreter
for model_dir, inputs, outputs in json.loads(sys.argv[1]):
    with open(os.path.join(model_dir, "signature.json")) as f:
        lite = json.load(f)["litert"]
    run = Interpreter(model_path=os.path.join(model_dir, lite["file"])).get_signature_runner()
    data = np.load(inputs)
    actions = []
    if "initial_state" in lite:
        rows = data["observation"].shape[1]
        state = [np.repeat(s, rows, axis=0) for s in np.load(os.path.join(model_dir, lite["initial_state"])).values()]
        for observation, step_type in zip(data["observation"], data["step_type"]):
            out = run(in000=observation, in001=step_type, **{{f"in{{2 + i:03d}}": s for i, s in enumerate(state)}})
            actions.append(out["out000"])
            state = [out[f"out{{1 + i:03d}}"] for i in range(len(state))]
    else:
        actions = [run(in000=observation)["out000"] for observation in data["observation"]]
    np.save(outputs, np.stack(actions))
""".format(blocked=BLOCKED)


def train(root: str, example: str, overrides: list) -> None:
    common = ["train.eval_interval=0", "train.num_eval_episodes=2", 'train.writers=["jsonl"]',
              f"train.root_dir={json.dumps(root)}"]
    Engine(os.path.join(EXAMPLES, example), [*overrides, *common]).train()


def record_greedy_steps(root: str) -> dict:
    """Observations, step types and the actions of the evaluator's greedy step, 2 x NUM_STEPS of them.

    NUM_STEPS in the evaluation environments, then NUM_STEPS on wide random
    observations: a barely trained policy may pick one action in every state
    it meets, and equal actions would then say little.
    """
    engine = open_run(root, [f"train.num_eval_episodes={NUM_COPIES}"])
    rng = np.random.default_rng(0)
    with engine.restored() as parts:
        env = parts.eval_env
        act = tf.function(lambda raw, t, p: greedy(parts.chain, parts.algorithm, raw, t, p, env.batch_size),
                          autograph=False)
        raw = env.reset()
        t_state, p_state = parts.chain.initial_state(env.batch_size), parts.algorithm.initial_state(env.batch_size)
        rows = {"observation": [], "step_type": [], "action": []}
        for step in range(2 * NUM_STEPS):
            if step >= NUM_STEPS:
                wide = rng.normal(0.0, 3.0, raw.observation.shape).astype(raw.observation.dtype)
                raw = raw._replace(observation=wide, step_type=np.ones_like(raw.step_type))  # MID steps
            action, t_state, p_state = act(raw, t_state, p_state)
            rows["observation"].append(raw.observation)
            rows["step_type"].append(raw.step_type)
            rows["action"].append(action.numpy())
            if step < NUM_STEPS - 1:
                raw = env.step(action.numpy())
    return {k: np.stack(v) for k, v in rows.items()}


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return tmp_path_factory.mktemp("export")


@pytest.fixture(scope="module")
def exported(base):
    """name -> (recorded greedy steps, actions of the exported model loaded without rlengine, signature)."""
    jobs, recorded, infos = [], {}, {}
    for name, (example, overrides) in RUNS.items():
        root, model = str(base / name), str(base / f"{name}-model")
        train(root, example, overrides)
        infos[name] = export_run(root, model)
        recorded[name] = record_greedy_steps(root)
        inputs = str(base / f"{name}-inputs.npz")
        np.savez(inputs, observation=recorded[name]["observation"], step_type=recorded[name]["step_type"])
        jobs.append((model, inputs, str(base / f"{name}-actions.npy")))
    done = subprocess.run([sys.executable, "-c", LOADER, json.dumps(jobs)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = {name: np.load(job[2]) for name, job in zip(RUNS, jobs)}
    return {name: (recorded[name], loaded[name], infos[name]) for name in RUNS}


def run_lite_models(base, python: str = sys.executable) -> dict:
    """name -> the actions of each run's policy.tflite on its recorded observations, called by ``python`` with
    LiteRT and NumPy only."""
    jobs = [(str(base / f"{name}-model"), str(base / f"{name}-inputs.npz"), str(base / f"{name}-lite.npy"))
            for name in RUNS]
    done = subprocess.run([python, "-c", LITE_LOADER, json.dumps(jobs)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return {name: np.load(job[2]) for name, job in zip(RUNS, jobs)}


@pytest.fixture(scope="module")
def lite_actions(base, exported):
    return run_lite_models(base)


def assert_lite_acts_as_saved_model(exported: dict, lite_actions: dict) -> None:
    for name, (steps, _, info) in exported.items():
        assert info["litert"]["file"] == "policy.tflite" and ("initial_state" in info["litert"]) == info["stateful"]
        if steps["action"].dtype.kind == "f":
            np.testing.assert_allclose(lite_actions[name], steps["action"], rtol=1e-5, atol=1e-5, err_msg=name)
        else:
            np.testing.assert_array_equal(lite_actions[name], steps["action"], err_msg=name)


@pytest.mark.thorough  # the root suite leaves it out for time; this package's tox env runs it
def test_the_litert_model_gives_the_same_greedy_actions_without_tensorflow(exported, lite_actions):
    assert_lite_acts_as_saved_model(exported, lite_actions)
    assert exported["ppo-lstm-framestack"][2]["litert"]["inputs"] == {
        "in000": "observation", "in001": "step_type", "in002": "state[0]", "in003": "state[1]", "in004": "state[2]"}


@pytest.mark.thorough  # the root suite leaves it out for time; this package's tox env runs it
@pytest.mark.slow  # a venv and a download from PyPI: about a minute
def test_the_litert_model_runs_in_a_venv_with_litert_and_numpy_only(exported, base, tmp_path_factory):
    venv = tmp_path_factory.mktemp("litert-venv")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = str(venv / "bin" / "python")
    subprocess.run([python, "-m", "pip", "install", "-q", "ai-edge-litert>=2.3,<3", "numpy"], check=True,
                   timeout=900)
    assert subprocess.run([python, "-c", "import tensorflow"], capture_output=True).returncode != 0
    assert_lite_acts_as_saved_model(exported, run_lite_models(base, python))


def test_discrete_policy_gives_the_same_greedy_actions(exported):
    steps, actions, info = exported["ppo-cartpole"]

    assert info["stateful"] is False
    assert actions.dtype == np.int32 and actions.shape == (2 * NUM_STEPS, NUM_COPIES)
    np.testing.assert_array_equal(actions, steps["action"])
    assert len(np.unique(actions)) == 2  # both actions occur, so equality says something


def test_continuous_policy_with_normaliser_gives_the_same_actions(exported):
    steps, actions, info = exported["ppo-pendulum"]

    assert info["stateful"] is False and info["transformers"] == ["normalize"]
    assert info["action"] == {"shape": [None, 1], "dtype": "float32", "minimum": [-2.0], "maximum": [2.0]}
    assert actions.shape == (2 * NUM_STEPS, NUM_COPIES, 1)
    np.testing.assert_allclose(actions, steps["action"], rtol=1e-5, atol=1e-5)
    assert np.ptp(actions) > 1e-3  # the actions vary with the observation


def test_stateful_policy_carries_lstm_and_frame_stack_state(exported):
    steps, actions, info = exported["ppo-lstm-framestack"]

    assert info["stateful"] is True and set(info["functions"]) == {"initial_state", "step"}
    # frame history [B, 2, 2] (CartPoleNoVelocity observes 2 numbers), then the LSTM's h and c
    assert [s["shape"] for s in info["state"]] == [[None, 2, 2], [None, 16], [None, 16]]
    np.testing.assert_array_equal(actions, steps["action"])
    assert len(np.unique(actions)) == 2


def test_cli_export_writes_model_and_description(capsys, tmp_path, base, exported):
    out = tmp_path / "model"
    code = cli.main(["export", str(base / "ppo-cartpole"), str(out)])
    text = capsys.readouterr().out

    assert code == 0
    assert f"to {out}" in text and "action(observation)" in text
    assert sorted(os.listdir(out)) == ["README.txt", "assets", "fingerprint.pb", "policy.tflite",
                                       "rlengine-export.json", "saved_model.pb", "signature.json", "variables"]
    assert tf.saved_model.contains_saved_model(str(out))
