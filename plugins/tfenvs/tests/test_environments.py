"""The five environments as the engine uses them: the specs of the Gymnasium path, reproducible
episodes from stateless seeds, a state that continues exactly from tensors, copies that play the
same episodes in any batch, under tf.function(jit_compile=True) too; and the plugin's registrations."""

import importlib
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from rlengine_tfenvs.plugin import GRAPH_ENVIRONMENTS, RLENGINE_API_VERSION

import rlengine
from rlengine import StepType

IDS = list(GRAPH_ENVIRONMENTS)


def make(env_id, num_envs=4, first_env_id=0):
    module, _, name = GRAPH_ENVIRONMENTS[env_id].partition(":")
    return getattr(importlib.import_module(module), name)(env_id, num_envs, seed=0, first_env_id=first_env_id)


def actions(env, steps, seed=0):
    spec = env.action_spec()
    rng = np.random.default_rng(seed)
    shape = (steps, env.num_envs, *spec.shape)
    if spec.dtype == tf.int32:
        return rng.integers(spec.minimum, spec.maximum + 1, size=shape).astype(np.int32)
    return rng.uniform(spec.minimum, spec.maximum, size=shape).astype(np.float32)


def run(env, state, action_rows, jit_compile=False):
    """``(final state, stacked time steps)`` of one tf.function looping over ``action_rows``."""

    @tf.function(jit_compile=jit_compile)
    def loop(state, action_rows):
        observations = tf.TensorArray(tf.float32, len(action_rows))
        step_types = tf.TensorArray(tf.int32, len(action_rows))

        def body(t, state, observations, step_types):
            state, time_step = env.step(state, action_rows[t])
            return t + 1, state, observations.write(t, time_step.observation), step_types.write(t, time_step.step_type)

        _, state, observations, step_types = tf.while_loop(
            lambda t, *_: t < len(action_rows), body, (0, state, observations, step_types))
        return state, observations.stack(), step_types.stack()

    return loop(state, tf.constant(action_rows))


@pytest.mark.parametrize("env_id", IDS)
def test_specs_are_those_of_the_gymnasium_path(env_id):
    gym_spaces = pytest.importorskip("rlengine_gym.spaces")
    gymnasium = pytest.importorskip("gymnasium")
    env, original = make(env_id), gymnasium.make(env_id.removeprefix("tf/"))
    assert env.action_spec() == gym_spaces.action_spec(original.action_space)
    assert env.time_step_spec().observation == gym_spaces.observation_spec(original.observation_space)
    assert env.time_step_spec().prev_action == env.action_spec()


@pytest.mark.thorough
@pytest.mark.parametrize("env_id", IDS)
def test_same_seed_same_episodes_and_a_saved_state_continues_them_exactly(env_id):
    env = make(env_id)
    rows = actions(env, 300)
    start, _ = env.reset(tf.constant([5, 0]))
    state, observations, step_types = run(env, start, rows)
    assert (step_types.numpy() == StepType.FIRST).any() or env_id != "tf/CartPole-v1"  # episodes ended and began
    again, observations_again, _ = run(env, env.reset(tf.constant([5, 0]))[0], rows)
    np.testing.assert_array_equal(observations, observations_again)
    _, other, _ = run(env, env.reset(tf.constant([6, 0]))[0], rows)
    assert not np.array_equal(observations, other)

    # a checkpoint holds the state as tensors: stop at step 120, save as numpy, continue from it
    middle, first_part, _ = run(env, start, rows[:120])
    saved = tf.nest.map_structure(lambda t: t.numpy(), middle)
    restored = tf.nest.map_structure(tf.constant, saved)
    _, second_part, _ = run(env, restored, rows[120:])
    np.testing.assert_array_equal(np.concatenate([first_part, second_part]), observations)
    tf.nest.map_structure(lambda spec, leaf: np.testing.assert_equal(list(leaf.shape), [4, *spec.shape]),
                          env.state_spec(), state)


def test_a_copy_plays_the_same_episodes_in_any_batch():
    whole, part = make("tf/CartPole-v1", num_envs=6), make("tf/CartPole-v1", num_envs=2, first_env_id=3)
    rows = actions(whole, 200)
    _, observations, _ = run(whole, whole.reset(tf.constant([1, 2]))[0], rows)
    _, part_observations, _ = run(part, part.reset(tf.constant([1, 2]))[0], rows[:, 3:5])
    np.testing.assert_array_equal(observations[:, 3:5], part_observations)


def test_cartpole_under_xla_matches_the_graph_to_rounding():
    env = make("tf/CartPole-v1", num_envs=8)
    rows = actions(env, 50)
    start = env.reset(tf.constant([1, 2]))[0]
    _, observations, step_types = run(env, start, rows)
    _, xla_observations, xla_step_types = run(env, start, rows, jit_compile=True)
    np.testing.assert_array_equal(step_types, xla_step_types)
    np.testing.assert_allclose(observations, xla_observations, rtol=0, atol=1e-6)


def _api(version):
    return tuple(int(part) for part in version.split("."))


def test_the_plugin_declares_the_cores_api():
    assert _api(RLENGINE_API_VERSION) <= _api(rlengine.API_VERSION)


def test_the_plugin_registers_the_five_ids_without_importing_tensorflow():
    code = ("import sys; from rlengine.plugin.manager import build_plugins; import rlengine_tfenvs.plugin as p; "
            "plugins = build_plugins(load_entry_points=False, extra_plugins=[('tfenvs', p)]); "
            "print(sorted(plugins.registered_by('tfenvs')['graph_environments'])); "
            "print(any(m.split('.')[0] == 'tensorflow' for m in sys.modules))")
    import os

    plugin_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    root = os.path.dirname(os.path.dirname(plugin_dir))
    path = os.pathsep.join([plugin_dir, root, os.environ.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": path}, cwd=root)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == [str(sorted(IDS)), "False"]
