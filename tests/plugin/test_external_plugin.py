"""A third-party plugin package, installed with pip into a directory and used through the CLI."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from tests.plugin_packages import pip_install, run_rlengine

SETUP_PY = """
    from setuptools import setup

    setup(
        name="{dist}",
        version="{version}",
        py_modules=["{module}"],
        entry_points={{"rlengine": ["{entry_point} = {module}"]}},
    )
"""

COINFLIP_MODULE = '''
    """A uniformly random policy and a one-bit guessing environment."""

    import attrs
    import numpy as np
    import tensorflow as tf

    from rlengine import Algorithm, Environment, LossInfo, PolicyStep, StepType, TimeStep, hookimpl


    @attrs.define
    class GuessConfig:
        episode_length: int = attrs.field(default=3, validator=attrs.validators.gt(0))


    class GuessEnvironment(Environment):
        """Observation: the fraction of the episode elapsed; reward 1 for action 1, else 0."""

        config_class = GuessConfig

        def __init__(self, env_id, num_envs, seed, first_env_id=0, config=None):
            super().__init__(env_id, num_envs, seed, first_env_id, config or GuessConfig())
            self.ids = np.arange(first_env_id, first_env_id + num_envs, dtype=np.int32)
            self.t = np.zeros(num_envs, np.int64)

        def time_step_spec(self):
            scalar = lambda dtype: tf.TensorSpec([], dtype)
            return TimeStep(scalar(tf.int32), scalar(tf.float32), scalar(tf.float32),
                            tf.TensorSpec([1], tf.float32), self.action_spec(), scalar(tf.int32))

        def action_spec(self):
            return tf.TensorSpec([], tf.int32)

        def _time_step(self, step_type, reward, discount, prev_action):
            observation = (self.t / self.config.episode_length).astype(np.float32)[:, None]
            return TimeStep(np.asarray(step_type, np.int32), np.asarray(reward, np.float32),
                            np.asarray(discount, np.float32), observation,
                            np.asarray(prev_action, np.int32), self.ids.copy())

        def reset(self):
            self.t[:] = 0
            n = self.num_envs
            return self._time_step(np.full(n, StepType.FIRST), np.zeros(n), np.ones(n), np.zeros(n))

        def step(self, action):
            action = np.asarray(action)
            restart = self.t >= self.config.episode_length
            self.t = np.where(restart, 0, self.t + 1)
            last = self.t >= self.config.episode_length
            step_type = np.where(restart, StepType.FIRST, np.where(last, StepType.LAST, StepType.MID))
            reward = np.where(restart, 0.0, (action == 1).astype(np.float64))
            discount = np.where(last, 0.0, 1.0)
            return self._time_step(step_type, reward, discount, np.where(restart, 0, action))


    class RandomAlgorithm(Algorithm):
        """Picks 0 or 1 uniformly at random and never learns anything."""

        def _uniform(self, time_step):
            batch = tf.shape(time_step.step_type)[0]
            return tf.random.uniform([batch], 0, 2, dtype=tf.int32)

        def predict(self, time_step, state):
            return PolicyStep(self._uniform(time_step), state, ())

        def rollout(self, time_step, state):
            return PolicyStep(self._uniform(time_step), state, ())

        def train_step(self, experience, state):
            return PolicyStep((), state, ())

        def train_complete(self, tape, info, weight=None):
            return LossInfo(tf.constant(0.0), {}), []

        def apply_gradients(self, grads_and_vars):
            return None


    RLENGINE_API_VERSION = "1.0"


    @hookimpl
    def rlengine_register_algorithms(register):
        register("coinflip_random", RandomAlgorithm)


    @hookimpl
    def rlengine_register_environments(register):
        register("coinflip_guess", GuessEnvironment)
'''

BROKEN_MODULE = """
    raise ImportError("brokenext needs a package that is not installed")
"""


def _write_package(root: Path, dist: str, version: str, entry_point: str, module: str, source: str) -> Path:
    root.mkdir(parents=True)
    setup = SETUP_PY.format(dist=dist, version=version, entry_point=entry_point, module=module)
    (root / "setup.py").write_text(textwrap.dedent(setup))
    (root / f"{module}.py").write_text(textwrap.dedent(source))
    return root


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("rlengine: error:")]


@pytest.fixture(scope="module")
def sites(tmp_path_factory):
    """Two pip --target directories: a working plugin and one that fails at import."""
    root = tmp_path_factory.mktemp("external")
    good = _write_package(root / "src" / "coinflip", "rlengine-coinflip", "0.3.1", "coinflip",
                          "rlengine_coinflip", COINFLIP_MODULE)
    broken = _write_package(root / "src" / "brokenext", "rlengine-brokenext", "0.0.7", "brokenext",
                            "rlengine_brokenext", BROKEN_MODULE)
    pip_install(good, root / "site-good")
    pip_install(broken, root / "site-broken")
    return root


@pytest.fixture(scope="module")
def listed(sites):
    return run_rlengine("plugins", "--json", pythonpath=[sites / "site-good"], cwd=sites)


@pytest.fixture(scope="module")
def listed_with_broken(sites):
    return run_rlengine("plugins", "--json", pythonpath=[sites / "site-good", sites / "site-broken"], cwd=sites)


@pytest.fixture(scope="module")
def trained(sites):
    run_dir = sites / "run"
    process = run_rlengine(
        "train", "--algorithm", "coinflip_random", "--env", "coinflip_guess", "--num-env-steps", "64",
        "--root-dir", str(run_dir),
        "--set", 'train.writers=["jsonl"]', "--set", "train.eval_interval=0",
        "--set", "train.unroll_length=4", "--set", "train.num_envs=2",
        "--set", "coinflip_guess.episode_length=2",
        pythonpath=[sites / "site-good"], cwd=sites,
    )
    return process, run_dir


def test_pip_installed_the_distribution_metadata(sites):
    dist_info = sites / "site-good" / "rlengine_coinflip-0.3.1.dist-info"

    assert (sites / "site-good" / "rlengine_coinflip.py").is_file()
    assert "[rlengine]" in (dist_info / "entry_points.txt").read_text()
    assert "coinflip = rlengine_coinflip" in (dist_info / "entry_points.txt").read_text()


@pytest.mark.first_party
def test_plugins_lists_the_external_plugin_with_its_distribution(listed):
    assert listed.returncode == 0, listed.stderr
    assert listed.stderr == ""
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    coinflip = rows["coinflip"]
    assert coinflip["distribution"] == "rlengine-coinflip"
    assert coinflip["version"] == "0.3.1"
    assert coinflip["algorithms"] == ["coinflip_random"]
    assert coinflip["environments"] == ["coinflip_guess"]
    assert coinflip["writers"] == coinflip["transformers"] == coinflip["distributions"] == []
    assert {"algorithms", "gym", "writers", "builtin-distributions"} <= set(rows)


@pytest.mark.first_party
def test_train_runs_the_external_algorithm_on_the_external_environment(trained):
    process, run_dir = trained

    assert process.returncode == 0, process.stderr[-3000:]
    assert "Traceback" not in process.stderr
    assert "rlengine: 64 env steps" in process.stdout
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [row["iteration"] for row in rows] == list(range(1, 9))  # 64 steps / (4 steps x 2 copies)
    assert rows[-1]["env_steps"] == 64
    assert all(row["loss/total"] == 0.0 for row in rows)
    assert any("train/episode_return" in row for row in rows)
    assert not any(key.startswith("eval/") for row in rows for key in row)


@pytest.mark.first_party
def test_train_writes_the_external_plugins_section_into_the_config(trained):
    process, run_dir = trained
    assert process.returncode == 0

    text = (run_dir / "config.toml").read_text()

    assert 'algorithm = "coinflip_random"' in text
    assert "[coinflip_guess]" in text and "episode_length = 2" in text


@pytest.mark.first_party
def test_broken_plugin_is_one_error_line_and_the_others_still_list(listed_with_broken):
    process = listed_with_broken

    assert process.returncode == 1
    [error] = process.stderr.splitlines()  # one line, no traceback
    assert error.startswith("rlengine: error: plugin 'brokenext' (")
    assert "'brokenext'" in error
    assert "rlengine-brokenext 0.0.7" in error
    assert "ImportError: brokenext needs a package that is not installed" in error
    rows = {row["name"]: row for row in json.loads(process.stdout)}
    assert rows["brokenext"]["distribution"] == "rlengine-brokenext"
    assert rows["brokenext"]["version"] == "0.0.7"
    assert "could not import" in rows["brokenext"]["error"]
    assert rows["coinflip"]["algorithms"] == ["coinflip_random"]
    assert {"algorithms", "gym", "writers"} <= set(rows)
