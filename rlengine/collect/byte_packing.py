"""The arrays of a time step handed to the graph as one byte buffer.

A ``tf.numpy_function`` pays for each array it returns (on 8 CartPole copies a
call returning a time step's six arrays took three times as long as one
returning one: docs/performance.md), more than copying a few hundred bytes costs. So the small leaves of a
time step travel one after another in one ``uint8`` buffer: the Python side
joins their bytes, the graph splits the buffer and reinterprets each part
(``tf.bitcast``). Large leaves (image observations) are returned as they are,
since copying them twice would cost more than the call saves::

    packing = BytePacking(flat_spec, batch)
    flat_tensors = packing.numpy_function(py_step, [action])   # py_step returns the flat arrays

The bytes are joined from each leaf's ``tobytes()``, one C call a leaf: a
NumPy call that makes an array (a view, a reshape) costs more than copying
these few bytes, and between two environment steps each such call costs
several times what it does in a tight loop. The leaf-after-leaf layout
keeps each part contiguous for the graph's split.

``py_step`` must return arrays that already match the spec (shape and
dtype), as the environment checks make them.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
import tensorflow as tf

#: A leaf larger than this (in bytes over the whole batch) is returned on its own.
LARGEST_PACKED_LEAF = 4096
#: The dtypes ``tf.bitcast`` reads back from bytes (and bool, cast): others (strings, 4- and 8-bit floats) go alone.
PACKED_DTYPES = (tf.bool, tf.int8, tf.uint8, tf.int16, tf.uint16, tf.int32, tf.uint32, tf.int64, tf.uint64,
                 tf.float16, tf.bfloat16, tf.float32, tf.float64)


class BytePacking:
    """How the leaves of ``flat_spec`` (with a leading ``batch`` dimension) travel: packed or on their own."""

    def __init__(self, flat_spec: Sequence[tf.TensorSpec], batch: int):
        self.batch = batch
        self.shapes = [[batch, *s.shape.as_list()] for s in flat_spec]
        self.leaf_dtypes = [s.dtype for s in flat_spec]
        self.packed = [i for i, s in enumerate(flat_spec) if _packable(s, batch)]
        self.widths = [_row_bytes(flat_spec[i]) for i in self.packed]
        self.alone = [i for i in range(len(flat_spec)) if i not in self.packed]
        if len(self.packed) < 2:  # nothing to gain
            self.packed, self.widths, self.alone = [], [], list(range(len(flat_spec)))
        #: the dtypes ``pack`` returns: the buffer (if any), then the leaves returned on their own
        self.dtypes = ([tf.uint8] if self.packed else []) + [self.leaf_dtypes[i] for i in self.alone]

    def numpy_function(self, py_leaves: Callable[..., Sequence[Any]], inputs: list) -> list:
        """``tf.numpy_function(py_leaves, inputs, ...)`` with the leaves packed on the way: the flat leaves as tensors."""
        single = len(self.dtypes) == 1  # one output goes bare: eagerly, a list of one came back split into rows

        def packed(*args: Any) -> Any:
            outputs = self.pack(py_leaves(*args))
            return outputs[0] if single else outputs

        result = tf.numpy_function(packed, inputs, self.dtypes[0] if single else self.dtypes, stateful=True)
        return self.unpack([result] if single else result)

    def pack(self, leaves: Sequence[Any]) -> list:
        """The Python side: ``[buffer, *alone leaves]`` from the flat leaves."""
        alone = [leaves[i] for i in self.alone]
        if not self.packed:
            return alone
        buffer = bytearray().join([_bytes(leaves[i]) for i in self.packed])  # writable, as the graph may reuse it
        return [np.frombuffer(buffer, np.uint8), *alone]

    def unpack(self, outputs: Sequence[tf.Tensor]) -> list:
        """The graph side: the flat leaves, each with its spec's shape and dtype."""
        leaves: list = [None] * len(self.shapes)
        outputs = list(outputs)
        if self.packed:
            buffer = tf.ensure_shape(outputs.pop(0), [self.batch * sum(self.widths)])
            for i, part in zip(self.packed, tf.split(buffer, [self.batch * w for w in self.widths], axis=0)):
                leaves[i] = self._reinterpret(part, i)
        for i, tensor in zip(self.alone, outputs):
            leaves[i] = tf.ensure_shape(tensor, self.shapes[i])
        return leaves

    def _reinterpret(self, part: tf.Tensor, i: int) -> tf.Tensor:
        dtype, shape = self.leaf_dtypes[i], self.shapes[i]
        if dtype == tf.uint8:
            return tf.reshape(part, shape)
        if dtype == tf.bool:  # numpy's bools are the bytes 0 and 1
            return tf.cast(tf.reshape(part, shape), tf.bool)
        if dtype.size == 1:
            return tf.bitcast(tf.reshape(part, shape), dtype)
        return tf.bitcast(tf.reshape(part, [*shape, dtype.size]), dtype)


def _bytes(leaf: Any) -> bytes:
    """The bytes of ``leaf`` in C order (a copy, so the environment may reuse its arrays)."""
    return leaf.tobytes() if type(leaf) is np.ndarray else np.asarray(leaf).tobytes()


def _packable(spec: tf.TensorSpec, batch: int) -> bool:
    """Fixed-size numbers that are small enough to be worth a copy."""
    if spec.dtype not in PACKED_DTYPES or not spec.shape.is_fully_defined():
        return False
    return 0 < batch * _row_bytes(spec) <= LARGEST_PACKED_LEAF


def _row_bytes(spec: tf.TensorSpec) -> int:
    return int(np.prod(spec.shape.as_list(), dtype=np.int64)) * spec.dtype.size
