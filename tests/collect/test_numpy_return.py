"""TensorFlow's conversion of what a numpy_function returns, with NumPy's version read once."""

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.util import numpy_compat

from rlengine.collect import numpy_return
from rlengine.collect.byte_packing import BytePacking

VALUES = [
    np.arange(6, dtype=np.float32).reshape(2, 3),
    np.array([300, -1], dtype=np.int64),
    [1, 2, 3],
    [[1.5, 2.5]],
    np.array([True, False]),
    b"bytes",
    [b"ab", b"c"],
    ["text", "longer text"],
    np.array([1.0, np.nan, np.inf]),
    3,
]
DTYPES = [None, np.float32, np.int8, np.uint8, object, np.bool_]


@pytest.mark.filterwarnings("ignore:invalid value encountered in cast")  # NaN to an integer, in both
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("copy", [None, True])
def test_the_replacement_converts_every_value_as_tensorflows_own(dtype, copy):
    for value in VALUES:
        try:
            expected = numpy_return._original(value, dtype=dtype, order="C", copy=copy)
        except Exception as err:  # the same refusal, then
            with pytest.raises(type(err)):
                numpy_return.np_asarray_numpy2(value, dtype=dtype, order="C", copy=copy)
            continue
        got = numpy_return.np_asarray_numpy2(value, dtype=dtype, order="C", copy=copy)
        assert got.dtype == expected.dtype and got.shape == expected.shape
        assert repr(got.tolist()) == repr(expected.tolist()), (value, dtype)  # NaNs alike, object arrays too
        assert (got is value) == (expected is value)  # copies exactly when the original copies


def test_a_byte_packing_function_puts_it_in_place_and_steps_through_it():
    packing = BytePacking([tf.TensorSpec([], tf.int32), tf.TensorSpec([2], tf.float32)], batch=3)
    leaves = packing.numpy_function(lambda: [np.arange(3, dtype=np.int32), np.ones((3, 2), np.float32)], [])
    assert numpy_compat.np_asarray is numpy_return.np_asarray_numpy2
    assert leaves[0].numpy().tolist() == [0, 1, 2] and leaves[1].numpy().sum() == 6


def test_another_tensorflows_function_is_left_as_it_is(monkeypatch):
    def theirs(values, dtype=None, order=None, copy=None):
        return np.asarray(values, dtype=dtype, order=order)

    monkeypatch.setattr(numpy_compat, "np_asarray", theirs)
    assert numpy_return.hoist_version_check() is False
    assert numpy_compat.np_asarray is theirs
