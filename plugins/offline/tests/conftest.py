"""Every test keeps its Minari datasets in its own directory, and builds the datasets it reads."""

import importlib.metadata
import os
import sys

import pytest

# The plugin may be tested from its checkout, uninstalled: its directory goes first on sys.path, and this
# one too (dict_env_module is imported by name).
_HERE = os.path.dirname(os.path.abspath(__file__))
for _path in (os.path.dirname(_HERE), _HERE):
    if _path not in sys.path:
        sys.path.insert(0, _path)


@pytest.fixture
def offline_plugins() -> list:
    """The plugin in-process when it is not installed (its tests run from the checkout), and the testing
    plugin (its memory writer)."""
    import rlengine_offline.plugin

    installed = any(e.name == "offline" for e in importlib.metadata.entry_points(group="rlengine"))
    from rlengine.testing import testing_plugin

    return [*([] if installed else [("offline", rlengine_offline.plugin)]), ("testing", testing_plugin())]


def _lean_expert(observation):
    """CartPole: push toward where the pole is falling (its angle and angular velocity); 500 on every seed
    tried (10 of 10)."""
    return int(3 * observation[2] + observation[3] > 0)


def _record(dataset_id: str, env_id: str, episodes: int, act=None, expert: bool = False, seed: int = 0):
    """A new dataset of ``episodes`` episodes of ``act`` (random actions when None) on ``env_id``."""
    import gymnasium as gym
    from rlengine_offline.recording import record_episodes, write_dataset

    env = gym.make(env_id)
    env.action_space.seed(seed)
    buffers, returns = record_episodes(env, act or (lambda _: env.action_space.sample()), episodes, seed)
    return write_dataset(dataset_id, env, buffers, "test", "made by a test",
                         sum(returns) / len(returns) if expert else None, reference_episodes=episodes)


@pytest.fixture(autouse=True)
def datasets_dir(tmp_path, monkeypatch):
    path = tmp_path / "datasets"
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(path))
    return path


@pytest.fixture
def lean_expert():
    return _lean_expert


def _checkpoint_values(root_dir, iteration: int) -> dict:
    """The algorithm's values (weights, optimizer slots, counters) in a run's checkpoint ``iteration``."""
    import tensorflow as tf

    reader = tf.train.load_checkpoint(str(root_dir / "checkpoints" / f"ckpt-{iteration}"))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
            if name.startswith("algorithm/")}


@pytest.fixture
def checkpoint_values():
    """``checkpoint_values(root_dir, iteration)``: name -> value of the algorithm's checkpointed variables."""
    return _checkpoint_values


@pytest.fixture
def record():
    """``record(dataset_id, env_id, episodes, act=None, expert=False, seed=0)``: a new dataset (see :func:`_record`)."""
    return _record


@pytest.fixture(autouse=True)
def op_determinism_undone():
    """A test's deterministic run turns on op determinism for the whole process, which refuses the clock ops
    of a later run that is not deterministic: each test leaves it off."""
    yield
    from tensorflow.python.framework import config as tf_config

    tf_config.disable_op_determinism()
