"""SteppingFunction: the stepping loops run op after op on one thread, and their graph errors still say where the
failing op was defined."""

import threading
import types

import numpy as np
import pytest
import tensorflow as tf

from rlengine.collect.stepping_function import LOCATED, SteppingFunction


def caller():
    return types.SimpleNamespace(error=None)  # what SteppingFunction reads of an EnvCaller


def looped(step, steps: int = 3):
    """``step(i)`` in a graph loop, as the collector's unroll calls the environment."""
    def fn():
        return tf.while_loop(lambda i: i < steps, lambda i: (tf.ensure_shape(step(i), []),), (tf.constant(0),))[0]
    return fn


def test_the_steps_of_the_loop_run_on_one_thread():
    threads = []

    def record(i):
        threads.append(threading.get_ident())
        return i + 1

    def step(i):
        return tf.numpy_function(record, [i], tf.int32, stateful=True)

    assert int(SteppingFunction(looped(step, steps=20), caller())()) == 20
    assert len(threads) == 20 and len(set(threads)) == 1


def gather_out_of_range(i):
    return tf.gather(tf.constant([1, 2]), i + 5) + i  # the line the error must name


def test_a_graph_error_in_the_loop_says_where_its_op_was_defined():
    with pytest.raises(tf.errors.InvalidArgumentError) as raised:
        SteppingFunction(looped(gather_out_of_range), caller())()
    assert LOCATED in str(raised.value)
    assert "in gather_out_of_range" in str(raised.value).split(LOCATED, 1)[1]
    assert LOCATED not in str(raised.value.__cause__)  # the single-threaded executor's own error lost it


def test_an_environment_error_is_raised_as_it_came_and_not_rerun():
    env = caller()
    calls = []

    def broken_env(i):
        calls.append(i)
        env.error = RuntimeError("the simulator crashed")  # as EnvCaller records the environment's exception
        raise env.error

    def step(i):
        return tf.numpy_function(broken_env, [i], tf.int32, stateful=True)

    with pytest.raises(tf.errors.OpError):
        SteppingFunction(looped(step), env)()
    assert len(calls) == 1


def test_when_the_rerun_does_not_fail_the_first_error_stands():
    fails = iter([True])  # only the first call fails

    def flaky(i):
        if next(fails, False):
            raise ValueError("only once")
        return np.int32(i + 1)

    def step(i):
        return tf.numpy_function(flaky, [i], tf.int32, stateful=True)

    with pytest.raises(tf.errors.OpError, match="only once"):
        SteppingFunction(looped(step), caller())()
