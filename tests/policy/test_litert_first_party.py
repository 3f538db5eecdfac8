"""The first-party algorithms on LiteRT: converted sampling draws what TensorFlow's does (a categorical, a
Normal, a tanh-squashed Normal, Gaussian noise, epsilon-greedy), and a cached policy loads and acts in a
process where TensorFlow cannot be imported."""

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

import rlengine
from rlengine.policy.cache import SUFFIX
from tests.policy.runs import train_cartpole, train_first_party

pytestmark = pytest.mark.first_party
DRAWS = 20_000
OFF_POLICY = {"hidden_sizes": [16], "mini_batch_size": 8, "initial_collect_steps": 8,
              "num_updates_per_iteration": 1, "replay_capacity": 1000}
PENDULUM = {"env": "Pendulum-v1", "num_envs": 1, "unroll_length": 4, "num_env_steps": 32, "eval_interval": 0}
RUNS = {
    "ppo-cartpole": {"train": {"algorithm": "ppo", "env": "CartPole-v1", "num_envs": 2, "unroll_length": 16,
                               "num_env_steps": 64, "eval_interval": 0},
                     "ppo": {"hidden_sizes": [16], "num_epochs": 1, "mini_batch_size": 0}},
    "ppo-pendulum": {"train": {**PENDULUM, "algorithm": "ppo", "transformers": ["normalize"], "unroll_length": 16},
                     "ppo": {"hidden_sizes": [16], "num_epochs": 1, "mini_batch_size": 0}},
    "sac-pendulum": {"train": {**PENDULUM, "algorithm": "sac"}, "sac": OFF_POLICY},
    "td3-pendulum": {"train": {**PENDULUM, "algorithm": "td3"}, "td3": OFF_POLICY},
    "dqn-cartpole": {"train": {**PENDULUM, "algorithm": "dqn", "env": "CartPole-v1"}, "dqn": OFF_POLICY},
}


@pytest.fixture(scope="module", params=sorted(RUNS))
def run(request, tmp_path_factory):
    return request.param, train_first_party(tmp_path_factory, request.param, RUNS[request.param])


def two_sample_distance(a: np.ndarray, b: np.ndarray) -> float:
    """The Kolmogorov-Smirnov distance of two samples: the largest gap between their empirical CDFs."""
    points = np.sort(np.concatenate([a, b]))
    cdf_a = np.searchsorted(np.sort(a), points, side="right") / len(a)
    cdf_b = np.searchsorted(np.sort(b), points, side="right") / len(b)
    return float(np.max(np.abs(cdf_a - cdf_b)))


def test_converted_sampling_draws_what_tensorflows_draws(run):
    name, run_dir = run
    converted, reference = rlengine.load(run_dir, backend="tflite"), rlengine.load(run_dir, backend="tensorflow")
    assert converted.sampling_backend == "tflite" and reference.sampling_backend == "tensorflow"
    observation = np.random.default_rng(1).normal(size=converted.observation_spec.shape).astype(np.float32)
    rows = np.repeat(observation[None], DRAWS, axis=0)
    ours = np.asarray(converted.predict(rows, deterministic=False)[0], np.float64).reshape(DRAWS, -1)
    theirs = np.asarray(reference.predict(rows, deterministic=False)[0], np.float64).reshape(DRAWS, -1)
    for column in range(ours.shape[1]):
        a, b = ours[:, column], theirs[:, column]
        assert len(np.unique(b)) > 1, f"{name}: TensorFlow's draws do not vary, so the comparison says nothing"
        # Kolmogorov-Smirnov at 0.1 %: exact for continuous draws, conservative for discrete ones
        assert two_sample_distance(a, b) < 1.95 * np.sqrt(2 / DRAWS), name


BLOCKED = ("tensorflow", "tensorflow_probability", "tf_keras")
CACHED_LOAD = """
import json, sys
for name in {blocked!r}:
    sys.modules[name] = None  # "import name" now raises ImportError
import numpy as np
import rlengine
run_dir, observations = sys.argv[1], np.load(sys.argv[2])
policy = rlengine.load(run_dir, seed=7)
state, actions = None, []
for observation in observations:
    action, state = policy.predict(observation, state)
    actions.append(action.tolist())
sampled, _ = policy.predict(observations[0], deterministic=False)
print(json.dumps({{"interpreter": policy.interpreter, "cached": policy.algorithm is None, "actions": actions,
                  "sampled": sampled.tolist()}}))
""".format(blocked=BLOCKED)


@pytest.mark.thorough  # the root suite leaves it out for time; this package's tox env runs it
def test_a_cached_policy_loads_and_acts_where_tensorflow_cannot_be_imported(tmp_path_factory, tmp_path):
    run_dir = str(tmp_path / "run")
    shutil.copytree(train_cartpole(tmp_path_factory), run_dir, ignore=shutil.ignore_patterns(f"*{SUFFIX}"))
    rlengine.load(run_dir, backend="tflite")  # converts, and caches
    observations = np.random.default_rng(0).normal(size=[12, 5, 4]).astype(np.float32)
    np.save(tmp_path / "observations.npy", observations)
    done = subprocess.run([sys.executable, "-c", CACHED_LOAD, run_dir, str(tmp_path / "observations.npy")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["interpreter"] == "litert" and out["cached"]
    reference, state, expected = rlengine.load(run_dir, backend="tensorflow"), None, []
    for observation in observations:  # normalize, frame_stack and the LSTM carry their state
        action, state = reference.predict(observation, state)
        expected.append(action.tolist())
    assert out["actions"] == expected and len({a for row in expected for a in row}) == 2
    same_seed = rlengine.load(run_dir, seed=7)
    assert out["sampled"] == same_seed.predict(observations[0], deterministic=False)[0].tolist()
