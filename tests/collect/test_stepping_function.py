"""SteppingFunction: stepping loops run op after op on one thread, and their graph errors still say where.

Where: the line that defined the failing op, which the one-line error names.
"""

import threading
import types

import numpy as np
import pytest
import tensorflow as tf

from rlengine.collect import stopping
from rlengine.collect.stepping_function import LOCATED, SteppingFunction, one_device

pytestmark = pytest.mark.skipif(not one_device(), reason="several devices: the default executor runs it")


def caller(calls_python: bool = True):
    """What it reads of a stepper (rlengine.collect.stepper)."""
    return types.SimpleNamespace(error=None, env=types.SimpleNamespace(failure=None), calls_python=calls_python)


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


def test_a_loop_of_thousands_of_steps_runs():
    """A long unroll or evaluation (a loop of only graph ops this long overflowed the stack on this executor)."""
    def step(i):
        return tf.numpy_function(lambda i: i + 1, [i], tf.int32, stateful=True)

    assert int(SteppingFunction(looped(step, steps=20_000), caller())()) == 20_000


def test_a_graph_error_in_the_loop_says_where_its_op_was_defined():
    with pytest.raises(tf.errors.InvalidArgumentError) as raised:
        SteppingFunction(looped(gather_out_of_range), caller())()
    assert LOCATED in str(raised.value)
    assert "in gather_out_of_range" in str(raised.value).split(LOCATED, 1)[1]
    first = raised.value.__cause__  # the single-threaded executor's own error, which lost it
    assert isinstance(first, tf.errors.InvalidArgumentError) and LOCATED not in str(first)


def test_a_loop_of_only_graph_ops_runs_on_the_default_executor():
    """A graph environment's loop calls no Python: on the single-threaded executor 20,000 such iterations
    overflowed the thread's stack, so the function takes the default executor for it."""
    threads = []

    def fn():
        threads.append(eager_executor_type())  # read while tracing: the executor of the calling context
        return tf.while_loop(lambda i: i < 20_000, lambda i: (i + 1,), (tf.constant(0),))[0]

    assert int(SteppingFunction(fn, caller(calls_python=False))()) == 20_000
    assert threads == [""]


def eager_executor_type() -> str:
    from tensorflow.python.eager import context
    return context.context().function_call_options.executor_type or ""


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
    calls = []

    def flaky(i):
        calls.append(i)
        if len(calls) == 1:
            raise ValueError("only once")
        return np.int32(i + 1)

    def step(i):
        return tf.numpy_function(flaky, [i], tf.int32, stateful=True)

    with pytest.raises(tf.errors.OpError, match="only once") as raised:
        SteppingFunction(looped(step), caller())()
    assert len(calls) == 4 and raised.value.__cause__ is None  # rerun: 3 steps without an error


def test_no_rerun_once_a_stop_is_requested():
    calls = []

    def step(i):
        return tf.numpy_function(lambda i: calls.append(i) or i + 1, [i], tf.int32, stateful=True) + \
            tf.gather(tf.constant([1, 2]), i + 5) * 0

    stopping.request(15)
    try:
        with pytest.raises(tf.errors.InvalidArgumentError) as raised:
            SteppingFunction(looped(step), caller())()
    finally:
        stopping.clear()
    assert len(calls) == 1 and LOCATED not in str(raised.value)  # the run is stopping: not stepped again
