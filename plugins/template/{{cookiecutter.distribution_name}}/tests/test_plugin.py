"""The plugin installs, rlengine finds it through its entry point, and its algorithm learns.

Run with the package installed (``pip install -e .``, or ``tox``): the
entry point only exists in an installed distribution's metadata.
"""

import importlib.metadata
import math

import pytest

from rlengine import ConfigError, Engine
from rlengine.testing import MemoryWriter, testing_plugin, tiny_config

PLUGIN_NAME = "{{ cookiecutter.plugin_name }}"
DISTRIBUTION = "{{ cookiecutter.distribution_name }}"
ALGORITHM = "{{ cookiecutter.algorithm_name }}"

# The testing kit's `counting` environment pays 1 + action for action 0 or 1
# over episodes of 4 steps: a greedy policy returns 8 if it learnt to pick
# action 1, and 4 if it picks 0 (which an untrained, uniform policy's mode does).
BEST_RETURN = 8.0


def _engine(root_dir, **train):
    # Entry points are loaded as in a real run; the testing kit is added in-process.
    return Engine(tiny_config(str(root_dir), algorithm=ALGORITHM, **train),
                  extra_plugins=[("testing", testing_plugin())])


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    engine = _engine(tmp_path_factory.mktemp("run"), num_env_steps=320, eval_interval=10, num_eval_episodes=2)
    result = engine.train()
    return result, MemoryWriter.last.rows


def test_the_entry_point_names_this_distribution():
    found = [ep for ep in importlib.metadata.entry_points(group="rlengine") if ep.name == PLUGIN_NAME]
    assert found, f"no 'rlengine' entry point {PLUGIN_NAME!r}: install the package first (pip install -e .)"
    assert found[0].dist.metadata["Name"] == DISTRIBUTION
    assert hasattr(found[0].load(), "rlengine_register_algorithms")


def test_rlengine_loads_the_plugin_and_its_algorithm(tmp_path):
    plugins = _engine(tmp_path).plugins

    assert not plugins.failures
    assert plugins.registered_by(PLUGIN_NAME)["algorithms"] == [ALGORITHM]


def test_training_finishes_with_finite_losses(trained):
    result, rows = trained

    assert result.env_steps == 320 and result.iterations == 40  # 320 steps / (4 steps x 2 envs)
    losses = [row["loss/total"] for row in rows if "loss/total" in row]
    assert len(losses) == result.iterations
    assert all(math.isfinite(loss) for loss in losses)


def test_the_trained_policy_prefers_the_rewarding_action(trained):
    result, rows = trained
    entropies = [row["loss/entropy"] for row in rows if "loss/entropy" in row]

    assert result.eval_return == BEST_RETURN  # greedy: always action 1
    # Exploring too: entropy falls from ln 2 (uniform) to below 0.4, i.e. action 1 has p > 0.87.
    assert entropies[0] > 0.65 and entropies[-1] < 0.4


def test_a_bad_option_is_refused_naming_the_key(tmp_path):
    with pytest.raises(ConfigError, match="learning_rate"):
        Engine({**tiny_config(str(tmp_path), algorithm=ALGORITHM), ALGORITHM: {"learning_rate": -1.0}},
               extra_plugins=[("testing", testing_plugin())])
