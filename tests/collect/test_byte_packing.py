"""A time step's arrays cross into the graph packed into one byte buffer, and come out as they went in."""

import numpy as np
import pytest
import tensorflow as tf

from rlengine.collect.byte_packing import LARGEST_PACKED_LEAF, BytePacking
from rlengine.collect.env_caller import EnvCaller
from rlengine.collect.env_checks import EnvironmentOutputMismatch
from rlengine.collect.faults import GuardedEnvironment
from rlengine.testing import CountingEnv, DictCountingEnv

BATCH = 3
SPECS = [
    tf.TensorSpec((), tf.int32),
    tf.TensorSpec((), tf.float32),
    tf.TensorSpec((4,), tf.float64),
    tf.TensorSpec((2, 3), tf.int64),
    tf.TensorSpec((), tf.bool),
    tf.TensorSpec((5,), tf.uint8),
    tf.TensorSpec((2,), tf.int8),
    tf.TensorSpec((3,), tf.float16),
    tf.TensorSpec((64, 64), tf.uint8),  # 4 KiB a row: returned on its own
    tf.TensorSpec((), tf.string),  # not a fixed-size number: on its own
    tf.TensorSpec((0,), tf.float32),  # nothing to copy: on its own
]


def _arrays(rng):
    arrays = []
    for spec in SPECS:
        shape = (BATCH, *spec.shape)
        if spec.dtype == tf.string:
            arrays.append(np.array([b"a", b"bc", b""], dtype=object))
        elif spec.dtype == tf.bool:
            arrays.append(rng.random(shape) < 0.5)
        elif spec.dtype.is_integer:
            info = np.iinfo(spec.dtype.as_numpy_dtype)
            arrays.append(rng.integers(info.min, info.max, size=shape, dtype=spec.dtype.as_numpy_dtype, endpoint=True))
        else:
            arrays.append((rng.standard_normal(shape) * 1e3).astype(spec.dtype.as_numpy_dtype))
    arrays[1][0] = np.nan  # special values pass as bits
    arrays[1][1] = -np.inf
    return arrays


def test_which_leaves_are_packed():
    packing = BytePacking(SPECS, BATCH)
    assert packing.packed == [0, 1, 2, 3, 4, 5, 6, 7]
    assert packing.alone == [8, 9, 10]
    assert packing.dtypes == [tf.uint8, tf.uint8, tf.string, tf.float32]
    assert BATCH * 64 * 64 > LARGEST_PACKED_LEAF


@pytest.fixture(params=[False, True], ids=["graph", "eager"])
def functions_eagerly(request):
    tf.config.run_functions_eagerly(request.param)
    yield
    tf.config.run_functions_eagerly(False)


def test_round_trip_through_numpy_function_keeps_every_bit(functions_eagerly):
    arrays = _arrays(np.random.default_rng(0))
    packing = BytePacking(SPECS, BATCH)
    leaves = tf.function(lambda: packing.numpy_function(lambda: arrays, []), autograph=False)()
    for spec, sent, got in zip(SPECS, arrays, leaves):
        assert got.dtype == spec.dtype and got.shape == (BATCH, *spec.shape)
        got = got.numpy()
        if spec.dtype == tf.string:
            assert list(got) == list(sent)
        else:
            assert got.tobytes() == np.ascontiguousarray(sent).tobytes(), spec


def test_non_contiguous_arrays_and_array_likes_pack_by_value():
    specs = [tf.TensorSpec((2,), tf.float32), tf.TensorSpec((), tf.int32), tf.TensorSpec((), tf.float64)]
    wide = np.arange(BATCH * 4, dtype=np.float32).reshape(BATCH, 4)
    arrays = [wide[:, ::2], np.arange(BATCH, dtype=np.int32), [0.5, -1.0, 2.0]]  # a list the checks accept
    packing = BytePacking(specs, BATCH)
    buffer = packing.pack(arrays)[0]
    wide[:] = -1  # the environment reuses its array: the buffer is a copy
    first, second, third = packing.unpack([tf.constant(buffer)])
    np.testing.assert_array_equal(first.numpy(), [[0, 2], [4, 6], [8, 10]])
    np.testing.assert_array_equal(second.numpy(), arrays[1])
    np.testing.assert_array_equal(third.numpy(), arrays[2])
    assert buffer.flags.writeable  # the graph may take it over and write into it


@pytest.mark.parametrize("specs", [[tf.TensorSpec((), tf.float32)], [tf.TensorSpec((4096,), tf.uint8)] * 2])
def test_nothing_to_gain_returns_the_leaves_as_they_are(specs):
    packing = BytePacking(specs, BATCH)
    assert packing.packed == [] and packing.dtypes == [s.dtype for s in specs]
    arrays = [np.zeros((BATCH, *s.shape), s.dtype.as_numpy_dtype) for s in specs]
    assert all(a is b for a, b in zip(packing.pack(arrays), arrays))


def test_a_lone_buffer_keeps_its_rows_eagerly_too(functions_eagerly):
    """With one output, numpy_function is given the buffer bare: eagerly, a list of one would come back split."""
    specs = [tf.TensorSpec((), tf.int32), tf.TensorSpec((2,), tf.float32)]
    arrays = [np.arange(BATCH, dtype=np.int32), np.ones((BATCH, 2), np.float32)]
    packing = BytePacking(specs, BATCH)
    assert packing.dtypes == [tf.uint8]
    first, second = tf.function(lambda: packing.numpy_function(lambda: arrays, []), autograph=False)()
    np.testing.assert_array_equal(first.numpy(), arrays[0])
    np.testing.assert_array_equal(second.numpy(), arrays[1])


class _SelfCheckedCountingEnv(CountingEnv):
    """Says it checks its own outputs (as the fault guard does), against a spec whose reward is int32."""

    checks_outputs = True

    def time_step_spec(self):
        return super().time_step_spec()._replace(reward=tf.TensorSpec([], tf.int32))

    def _time_step(self, step_type, reward, discount, action):
        return super()._time_step(step_type, reward, discount, action)._replace(reward=reward.astype(np.int32))


def test_a_caller_checks_what_an_environment_checked_against_another_spec():
    """Packed bytes would read an int32 reward as a float32 one: the caller checks it against the run's spec."""
    env = _SelfCheckedCountingEnv("counting", BATCH, seed=0)
    run_spec = CountingEnv("counting", BATCH, seed=0).time_step_spec()  # float32 rewards, as the run prepared
    caller = EnvCaller(env, run_spec)
    with pytest.raises(EnvironmentOutputMismatch, match="reward has dtype int32, expected float32"):
        caller._call("reset", env.reset)
    assert EnvCaller(CountingEnv("counting", BATCH, seed=0), run_spec)._check is not None  # unguarded: checked


@pytest.mark.parametrize("guarded", [False, True], ids=["checked-here", "guard's-leaves"])
def test_a_caller_hands_the_graph_the_time_step_the_environment_made(guarded):
    """Through the guard, the caller takes the leaves its check made, in the nest's own order."""
    env = DictCountingEnv("counting", BATCH, seed=0)
    if guarded:
        env = GuardedEnvironment(lambda seed: DictCountingEnv("counting", BATCH, seed), "environment 'counting'", 0)
    caller = EnvCaller(env, env.time_step_spec())
    assert (caller._check is None) == guarded
    run = tf.function(lambda: (caller.reset(), caller.step(tf.constant([1, 0, 1], tf.int32)),
                               caller.step(tf.constant([0, 0, 1], tf.int32))), autograph=False)
    *_, second = run()
    expected = DictCountingEnv("counting", BATCH, seed=0)
    expected.reset()
    expected.step(np.array([1, 0, 1], np.int32))
    want = expected.step(np.array([0, 0, 1], np.int32))
    for got, made in zip(tf.nest.flatten(second), tf.nest.flatten(want)):
        np.testing.assert_array_equal(got.numpy(), made)
    assert second.observation["parity"].numpy().tolist() == [0, 0, 0]  # two steps into the episode
