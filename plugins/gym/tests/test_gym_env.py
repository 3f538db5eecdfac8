import importlib.metadata
import os
import pickle
import subprocess
import sys

import gymnasium
import numpy as np
import pluggy
import pytest
import tensorflow as tf
import tiny_env_module
from gymnasium import spaces
from rlengine_gym import spaces as sp
from rlengine_gym.environment import GymConfig, GymEnvironment, make_env
from rlengine_gym.spaces import BoundedTensorSpec
from rlengine_gym.test_envs import CARTPOLE_NO_VELOCITY_ID, COUNTER_ID

import rlengine
import rlengine.plugin.hookspecs
from rlengine import ConfigError, SpecMismatchError, StepType

FIRST, MID, LAST = StepType.FIRST, StepType.MID, StepType.LAST


def counter(num_envs=2, seed=0, first_env_id=0, **kwargs):
    vectorization = kwargs.pop("vectorization", "sync")
    config = GymConfig(vectorization=vectorization, make_kwargs=kwargs)
    return GymEnvironment(COUNTER_ID, num_envs, seed, first_env_id, config)


# -- spaces ------------------------------------------------------------------
def test_box_specs_and_dtypes():
    box64 = spaces.Box(-1.0, 2.0, (3,), np.float64)
    assert sp.observation_spec(box64) == tf.TensorSpec((3,), tf.float32)
    assert not isinstance(sp.observation_spec(box64), BoundedTensorSpec)
    image = spaces.Box(0, 255, (4, 4, 3), np.uint8)
    assert sp.observation_spec(image) == tf.TensorSpec((4, 4, 3), tf.uint8)
    assert sp.observation_spec(spaces.Box(0, 9, (2,), np.int64)).dtype == tf.int32

    action = sp.action_spec(spaces.Box(np.array([-1.0, 0.0]), np.array([1.0, 5.0]), dtype=np.float64))
    assert isinstance(action, BoundedTensorSpec)
    assert action.shape == (2,) and action.dtype == tf.float32
    np.testing.assert_array_equal(action.minimum, [-1.0, 0.0])
    np.testing.assert_array_equal(action.maximum, [1.0, 5.0])

    convert = sp.observation_converter(box64)
    raw = np.ones((2, 3), np.float64)
    out = convert(raw)
    assert out.dtype == np.float32 and out.shape == (2, 3)
    raw[:] = 7  # the converted array never aliases the vector env's buffer
    assert out[0, 0] == 1
    same = np.ones((2, 3), np.float32)
    assert sp.observation_converter(spaces.Box(0, 1, (3,), np.float32))(same) is not same


def test_discrete_specs_respect_start():
    spec = sp.action_spec(spaces.Discrete(4, start=3))
    assert isinstance(spec, BoundedTensorSpec)
    assert spec.shape == () and spec.dtype == tf.int32 and spec.minimum == 0 and spec.maximum == 3
    space = spaces.Discrete(4, start=3)
    obs = sp.observation_converter(space)(np.array([3, 6], np.int64))
    assert obs.dtype == np.int32 and obs.tolist() == [0, 3]
    to_spec = sp.action_to_spec_dtypes(space, 2)
    gym_action = sp.action_to_gym(space)(to_spec([0, 3]))
    assert gym_action.tolist() == [3, 6] and gym_action.dtype == space.dtype
    assert all(space.contains(a) for a in gym_action)


def test_multidiscrete_and_multibinary_specs():
    spec = sp.action_spec(spaces.MultiDiscrete([3, 5]))
    assert spec.shape == (2,) and spec.dtype == tf.int32
    np.testing.assert_array_equal(spec.minimum, [0, 0])
    np.testing.assert_array_equal(spec.maximum, [2, 4])
    md = spaces.MultiDiscrete([3, 5], start=[1, -2])
    assert sp.action_to_gym(md)(np.array([[0, 0], [2, 4]], np.int32)).tolist() == [[1, -2], [3, 2]]
    binary = sp.observation_spec(spaces.MultiBinary([2, 3]))
    assert binary.shape == (2, 3) and binary.dtype == tf.int32
    assert binary.minimum == 0 and binary.maximum == 1


def test_dict_and_tuple_specs():
    space = spaces.Dict(
        {
            "b": spaces.Tuple((spaces.Discrete(2), spaces.Box(0, 1, (1,), np.float64))),
            "a": spaces.MultiBinary(3),
        }
    )
    spec = sp.observation_spec(space)
    assert list(spec) == ["a", "b"]  # Gymnasium's (sorted) key order
    assert isinstance(spec["b"], tuple) and len(spec["b"]) == 2
    assert spec["b"][1] == tf.TensorSpec((1,), tf.float32)
    batched = gymnasium.vector.utils.batch_space(space, 2).sample()
    converted = sp.observation_converter(space)(batched)
    tf.nest.assert_same_structure(converted, spec)
    assert converted["b"][1].dtype == np.float32 and converted["a"].dtype == np.int32


def test_unsupported_space_is_a_one_line_config_error():
    with pytest.raises(ConfigError) as info:
        sp.observation_spec(spaces.Dict({"t": spaces.Text(5)}), "Foo-v0")
    message = str(info.value)
    assert "Foo-v0" in message and "Text" in message and "\n" not in message


# -- Counter-v0: step types across the autoreset --------------------------------
def run_counter(terminate, vectorization="sync"):
    env = counter(2, episode_length=3, terminate=terminate, vectorization=vectorization)
    rows = [env.reset()]
    actions = np.array([1, 0])
    for _ in range(8):
        rows.append(env.step(actions))
    env.close()
    return rows


@pytest.mark.parametrize("terminate", [True, False])
def test_counter_step_types_rewards_discounts(terminate):
    rows = run_counter(terminate)
    step_types = np.stack([r.step_type for r in rows])[:, 0]
    # reset, 3 steps (3rd LAST), FIRST of the next episode, 3 steps, FIRST
    assert step_types.tolist() == [FIRST, MID, MID, LAST, FIRST, MID, MID, LAST, FIRST]
    counts = np.stack([r.observation for r in rows])[:, 0, 0]
    assert counts.tolist() == [0, 1, 2, 3, 0, 1, 2, 3, 0]  # no transition lost
    for r in rows:
        first = r.step_type == FIRST
        assert r.step_type.dtype == np.int32 and r.reward.dtype == np.float32
        assert r.discount.dtype == np.float32 and r.observation.dtype == np.float32
        np.testing.assert_array_equal(r.reward[first], 0.0)
        np.testing.assert_array_equal(r.discount[first], 1.0)
        np.testing.assert_array_equal(r.prev_action[first], 0)
        np.testing.assert_array_equal(r.discount[r.step_type == MID], 1.0)
    not_first = [r for r in rows if r.step_type[0] != FIRST]
    for r in not_first:
        assert r.reward.tolist() == [2.0, 1.0]  # 1 + the action applied
        assert r.prev_action.tolist() == [1, 0]
    last = rows[3]
    assert last.discount.tolist() == ([0.0, 0.0] if terminate else [1.0, 1.0])


def test_counter_env_ids_and_seeds_follow_first_env_id():
    env = counter(3, seed=100, first_env_id=5)
    ts = env.reset()
    assert ts.env_id.dtype == np.int32 and ts.env_id.tolist() == [5, 6, 7]
    assert ts.observation[:, 1].tolist() == [105, 106, 107]  # per-copy seeds
    ts = env.step(np.zeros(3, np.int32))
    assert ts.env_id.tolist() == [5, 6, 7]
    spec = env.time_step_spec()
    assert spec.env_id == tf.TensorSpec((), tf.int32)
    assert spec.prev_action == env.action_spec()
    env.close()
    env.close()  # idempotent


def test_counter_spec_and_errors():
    env = counter(2)
    with pytest.raises(RuntimeError):
        env.step(np.zeros(2, np.int32))
    env.reset()
    with pytest.raises(SpecMismatchError):
        env.step(np.zeros(3, np.int32))
    ts = env.step(tf.constant([1, 1]))  # eager tensors are accepted too
    assert ts.prev_action.tolist() == [1, 1]
    env.close()
    with pytest.raises(RuntimeError):
        env.step(np.zeros(2, np.int32))


def test_nested_observations_and_actions():
    env = GymEnvironment(f"tiny_env_module:{tiny_env_module.NESTED_ID}", 2, 0)
    spec = env.time_step_spec()
    assert set(spec.observation) == {"flag", "pos"}
    assert spec.observation["flag"].maximum == 2  # Discrete(3, start=1) -> 0..2
    assert isinstance(spec.prev_action, tuple) and spec.prev_action[0].maximum == 1
    ts = env.reset()
    assert ts.observation["flag"].tolist() == [0, 0]
    assert ts.prev_action[0].dtype == np.int32 and ts.prev_action[1].shape == (2, 2)
    action = (np.array([1, 0], np.int32), np.array([[0.5, 0.25], [-1.0, 0.0]], np.float32))
    for _ in range(3):
        ts = env.step(action)
    assert ts.step_type.tolist() == [LAST, LAST]
    assert ts.reward.tolist() == [6.0, 5.0]  # start=5 added back
    assert ts.observation["flag"].tolist() == [1, 0]
    np.testing.assert_allclose(ts.observation["pos"][:, 1], [0.75, -1.0])
    ts = env.step(action)
    assert ts.step_type.tolist() == [FIRST, FIRST]
    assert ts.prev_action[0].tolist() == [0, 0] and not ts.prev_action[1].any()
    with pytest.raises(SpecMismatchError):
        env.step(action[0])
    env.close()


# -- CartPole, seeding, async --------------------------------------------------
def cartpole_rollout(env_id, vectorization, seed, steps=30):
    env = GymEnvironment(env_id, 2, seed, config=GymConfig(vectorization=vectorization))
    rows = [env.reset()]
    rng = np.random.default_rng(0)
    for _ in range(steps):
        rows.append(env.step(rng.integers(0, 2, size=2).astype(np.int32)))
    env.close()
    return np.stack([r.observation for r in rows]), np.stack([r.step_type for r in rows])


def test_seeding_is_reproducible():
    obs_a, _ = cartpole_rollout("CartPole-v1", "sync", seed=3)
    obs_b, _ = cartpole_rollout("CartPole-v1", "sync", seed=3)
    obs_c, _ = cartpole_rollout("CartPole-v1", "sync", seed=4)
    np.testing.assert_array_equal(obs_a, obs_b)
    assert not np.array_equal(obs_a[0], obs_c[0])
    assert not np.array_equal(obs_a[0, 0], obs_a[0, 1])  # copies differ


def test_async_matches_sync():
    sync_obs, sync_types = cartpole_rollout("CartPole-v1", "sync", seed=1)
    async_obs, async_types = cartpole_rollout("CartPole-v1", "async", seed=1)
    np.testing.assert_array_equal(sync_obs, async_obs)
    np.testing.assert_array_equal(sync_types, async_types)
    sync_rows = run_counter(terminate=True, vectorization="sync")
    async_rows = run_counter(terminate=True, vectorization="async")
    for a, b in zip(sync_rows, async_rows):
        tf.nest.map_structure(np.testing.assert_array_equal, a, b)


@pytest.mark.thorough  # the root suite leaves it out for time; this package's tox env runs it
def test_async_workers_skip_the_main_module_unless_needed():
    script = os.path.join(os.path.dirname(__file__), "async_main_script.py")
    out = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    # CartPole's 2 workers do not re-run the main module; the worker of the env
    # class defined in the main module does.
    assert out.stdout.splitlines() == ["cartpole_done", "main_rerun", "main_module_env [0.5] [2]"]


def test_cartpole_no_velocity():
    env = GymEnvironment(CARTPOLE_NO_VELOCITY_ID, 2, 0)
    assert env.time_step_spec().observation == tf.TensorSpec((2,), tf.float32)
    assert gymnasium.spec(CARTPOLE_NO_VELOCITY_ID).max_episode_steps == 500
    env.close()
    full, _ = cartpole_rollout("CartPole-v1", "sync", seed=2, steps=5)
    partial, _ = cartpole_rollout(CARTPOLE_NO_VELOCITY_ID, "sync", seed=2, steps=5)
    np.testing.assert_array_equal(partial, full[..., [0, 2]])


def test_max_episode_steps_truncates_with_discount_one():
    env = GymEnvironment("CartPole-v1", 1, 0, config=GymConfig(max_episode_steps=2))
    env.reset()
    env.step(np.array([0], np.int32))
    ts = env.step(np.array([1], np.int32))
    assert ts.step_type.tolist() == [LAST] and ts.discount.tolist() == [1.0]
    env.close()


# -- ids, config, render, plugin --------------------------------------------------
def test_unknown_id_suggests_close_match():
    with pytest.raises(ConfigError) as info:
        GymEnvironment("CartPol-v1", 1, 0)
    message = str(info.value)
    assert "'CartPol-v1'" in message and "'CartPole-v1'" in message and "--env" in message
    assert "\n" not in message
    with pytest.raises(ConfigError, match="no_such_module_xyz"):
        GymEnvironment("no_such_module_xyz:Foo-v0", 1, 0)


def test_module_prefixed_id():
    env = GymEnvironment(f"tiny_env_module:{tiny_env_module.TINY_ID}", 2, 0)
    assert env.time_step_spec().observation.shape == (4,)
    env.reset()
    for t in range(7):  # alternating pushes keep the pole up until the 7-step limit
        ts = env.step(np.full(2, t % 2, np.int32))
    assert ts.step_type.tolist() == [LAST, LAST] and ts.discount.tolist() == [1.0, 1.0]
    env.close()
    gym_env = make_env("gymnasium.envs.classic_control:CartPole-v1", None, {})
    assert gym_env.observation_space.shape == (4,)
    gym_env.close()


def test_unpicklable_spec_falls_back_to_importing_by_id():
    spec = gymnasium.spec(tiny_env_module.UNPICKLABLE_ID)
    with pytest.raises(Exception):
        pickle.dumps(spec)
    env = GymEnvironment(f"tiny_env_module:{tiny_env_module.UNPICKLABLE_ID}", 1, 0)
    assert env._venv.env_fns[0].args[1] is None  # the id route, as worker processes use it
    env.reset()
    env.close()


def test_config_validation():
    for bad in (
        dict(vectorization="threads"),
        dict(max_episode_steps=0),
        dict(max_episode_steps=True),
        dict(render_mode=3),
        dict(make_kwargs={"render_mode": "human"}),
    ):
        with pytest.raises(ConfigError):
            GymConfig(**bad)
    with pytest.raises(ConfigError):
        GymEnvironment(COUNTER_ID, 1, 0, config={"vectorisation": "sync"})
    with pytest.raises(ConfigError):
        GymEnvironment(COUNTER_ID, 0, 0)


def test_render():
    env = GymEnvironment(COUNTER_ID, 2, 0, config=GymConfig(render_mode="rgb_array"))
    env.reset()
    env.step(np.zeros(2, np.int32))
    frame = env.render()
    assert frame.shape == (8, 8, 3) and frame.dtype == np.uint8 and frame[0, 0, 0] == 10
    env.close()
    env = counter(1)
    with pytest.raises(ConfigError, match="render_mode"):
        env.render()
    env.close()


def test_plugin_registers_gym():
    import rlengine_gym.plugin

    pm = pluggy.PluginManager("rlengine")
    pm.add_hookspecs(rlengine.plugin.hookspecs)
    pm.register(rlengine_gym.plugin, name="gym")
    registered = []
    pm.hook.rlengine_register_environments(register=lambda name, cls: registered.append((name, cls)))
    assert registered == [("gym", "rlengine_gym.environment:GymEnvironment")]  # lazy: imported on first use
    assert issubclass(GymEnvironment, rlengine.Environment)
    entry_points = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="rlengine")}
    assert entry_points.get("gym") == "rlengine_gym.plugin"
    assert COUNTER_ID in gymnasium.registry and CARTPOLE_NO_VELOCITY_ID in gymnasium.registry
