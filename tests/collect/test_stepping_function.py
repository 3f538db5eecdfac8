"""A stepping function runs on the single-threaded executor, loops and conds inside included, and traces
once. (With several devices it falls back to the default executor: ``tests/run/test_placement.py`` runs
the actors on a device of their own, which the single-threaded executor would deadlock.)"""

import threading

import numpy as np
import pytest
import tensorflow as tf

from rlengine.collect.stepping_function import one_device, stepping_function


def loop_with_a_cond_and_a_callback(calls: list):
    """A while loop whose body holds a cond and an environment-like callback."""

    def callback(i):
        calls.append(int(i))
        return np.float32(i)

    def body(i, total):
        x = tf.ensure_shape(tf.numpy_function(callback, [i], tf.float32, stateful=True), [])
        x = tf.cond(x > 2.0, lambda: x * 2.0, lambda: x)
        return i + 1, total + x

    def run():
        return tf.while_loop(lambda i, _: i < 5, body, (tf.constant(0), tf.constant(0.0)), parallel_iterations=1)[1]

    return run


def test_loops_and_conds_run_and_trace_once():
    calls: list = []
    run = stepping_function(loop_with_a_cond_and_a_callback(calls))
    assert float(run()) == 0 + 1 + 2 + 2 * 3 + 2 * 4  # 3 and 4 doubled by the cond
    assert float(run()) == 17.0
    assert calls == [0, 1, 2, 3, 4] * 2
    assert run.traced.experimental_get_tracing_count() == 1


def test_a_call_from_another_thread_runs_on_the_same_executor():
    results: list = []
    run = stepping_function(loop_with_a_cond_and_a_callback([]))
    worker = threading.Thread(target=lambda: results.append(float(run())))
    worker.start()
    worker.join()
    assert results == [17.0]


def switch_and_merge():
    """Low-level control flow, which only the default executor runs."""
    x = tf.constant(3.0)
    low, high = tf.raw_ops.Switch(data=x, pred=x > 2.0)
    return tf.raw_ops.Merge(inputs=[low, high * 2.0]).output


def test_the_executor_is_the_single_threaded_one():
    assert one_device()  # this machine's one CPU
    assert float(tf.function(switch_and_merge, autograph=False)()) == 6.0  # the default executor runs it
    with pytest.raises(tf.errors.FailedPreconditionError, match="Single-threaded executor"):
        stepping_function(switch_and_merge)()
