"""FixedSignatureFunction: later calls with the first call's dtypes and shapes run its trace directly."""

import copy
from typing import NamedTuple

import pytest
import tensorflow as tf

from rlengine.collect.fixed_signature import MAX_TRACES, FixedSignatureFunction


class Pair(NamedTuple):
    first: tf.Tensor
    rest: dict


def _step(pair: Pair, scale: tf.Tensor) -> tuple:
    return {"sum": pair.first + pair.rest["b"] * scale, "count": tf.shape(pair.rest["a"])[0]}, pair


def _pair(rows: int) -> Pair:
    return Pair(tf.ones([rows]), {"b": tf.range(rows, dtype=tf.float32), "a": tf.zeros([rows, 2], tf.int32)})


class _NoMatching:
    """Stands for the tf.function: a call that reaches it did not take the fast path."""

    def __call__(self, *args, **kwargs):
        raise AssertionError("went through the tf.function")


def test_a_call_with_the_first_calls_signature_runs_its_trace_directly():
    function = FixedSignatureFunction(_step)
    outputs, pair = function(_pair(3), tf.constant(2.0))
    traced = function.function
    function.function = _NoMatching()
    fast_outputs, fast_pair = function(_pair(3), tf.constant(2.0))
    assert fast_outputs["sum"].numpy().tolist() == outputs["sum"].numpy().tolist() == [1.0, 3.0, 5.0]
    assert int(fast_outputs["count"]) == 3
    assert isinstance(fast_pair, Pair) and fast_pair.rest["a"].shape == [3, 2]  # outputs keep their nesting
    assert traced.experimental_get_tracing_count() == 1


def test_another_shape_is_traced_and_then_both_run_directly():
    function = FixedSignatureFunction(_step)
    function(_pair(3), tf.constant(2.0))
    outputs, _ = function(_pair(4), tf.constant(1.0))  # through the tf.function: a second trace
    assert outputs["sum"].numpy().tolist() == [1.0, 2.0, 3.0, 4.0]
    assert function.experimental_get_tracing_count() == 2  # the tf.function's own API passes through
    function.function = _NoMatching()
    assert int(function(_pair(3), tf.constant(2.0))[0]["count"]) == 3
    assert int(function(_pair(4), tf.constant(2.0))[0]["count"]) == 4
    with pytest.raises(AssertionError, match="tf.function"):
        function(Pair(tf.ones([3], tf.float64), _pair(3).rest), tf.constant(2.0))  # another dtype


def test_the_first_traces_are_kept_and_later_signatures_go_through_the_tf_function():
    function = FixedSignatureFunction(_step)
    for rows in range(1, MAX_TRACES + 2):
        function(_pair(rows), tf.constant(1.0))
    function.function = _NoMatching()
    function(_pair(MAX_TRACES), tf.constant(1.0))
    with pytest.raises(AssertionError, match="tf.function"):
        function(_pair(MAX_TRACES + 1), tf.constant(1.0))


def test_none_leaves_are_part_of_the_signature():
    function = FixedSignatureFunction(lambda x, handles: x * 2.0 if handles[0] is None else x)
    function(tf.constant(1.0), (None, tf.constant(0)))
    function.function = _NoMatching()
    assert float(function(tf.constant(3.0), (None, tf.constant(0)))) == 6.0
    with pytest.raises(AssertionError, match="tf.function"):
        function(tf.constant(3.0), (tf.constant(1), tf.constant(0)))


def test_keyword_arguments_go_through_the_tf_function():
    function = FixedSignatureFunction(_step)
    function(_pair(2), tf.constant(1.0))
    assert function(pair=_pair(2), scale=tf.constant(2.0))[0]["sum"].numpy().tolist() == [1.0, 3.0]
    function.function = _NoMatching()
    with pytest.raises(AssertionError, match="tf.function"):
        function(pair=_pair(2), scale=tf.constant(2.0))


def test_functions_run_eagerly_while_debugging():
    """``--eager``: every call runs the Python function (an eager-only ``.numpy()`` works), none a trace."""
    seen = []

    def eager_only(x):
        seen.append(float(x.numpy()))
        return x + 1.0

    function = FixedSignatureFunction(eager_only)
    tf.config.run_functions_eagerly(True)
    try:
        assert [float(function(tf.constant(v))) for v in (1.0, 2.0, 3.0)] == [2.0, 3.0, 4.0]
    finally:
        tf.config.run_functions_eagerly(False)
    assert seen == [1.0, 2.0, 3.0]


def test_a_copy_is_a_function_too():
    function = copy.copy(FixedSignatureFunction(_step))
    assert function(_pair(2), tf.constant(1.0))[0]["sum"].numpy().tolist() == [1.0, 2.0]


def test_python_values_and_variables_always_go_through_the_tf_function():
    function = FixedSignatureFunction(_step)
    function(_pair(2), 2.0)
    variable = tf.Variable(2.0)
    function(_pair(2), variable)
    function.function = _NoMatching()
    for scale in (2.0, variable):
        with pytest.raises(AssertionError, match="tf.function"):
            function(_pair(2), scale)


def test_a_call_inside_a_graph_is_the_tf_functions():
    function = FixedSignatureFunction(_step)
    function(_pair(2), tf.constant(1.0))

    @tf.function(autograph=False)
    def outer(pair):
        return function(pair, tf.constant(3.0))[0]["sum"]

    assert outer(_pair(2)).numpy().tolist() == [1.0, 4.0]
    function.function = _NoMatching()
    function(_pair(2), tf.constant(1.0))  # the eager trace is still called directly
