"""What a checkpoint holds of a replay buffer: the rows its rings have written, not the preallocated rest.

The buffer's variables are preallocated for the whole capacity, so saving
them as they are writes every row a run *might* hold: ``replay_capacity =
2e8`` wrote 7.2 GB for 768 rows. Ring ``e`` fills positions
``0 .. min(head[e], per_env) - 1`` in order, so the first ``k`` positions of
every ring, ``k`` the fullest ring's count, hold every row ever written; a
checkpoint keeps ``[num_envs, k, ...]`` of each variable (and the same
slice of the sum tree's leaves) and nothing else; a frame-stacked leaf's
variable holds one frame per row, and so does its slice. The heads and the max
priority stay ordinary checkpointed variables.

Restoring writes the slices back into the preallocated variables and
rebuilds the sum tree from its leaves with the very arithmetic its updates
use (:meth:`rlengine.learn.replay.sumtree.SumTree.rebuild`), so a resumed run
samples exactly as the uninterrupted one. Positions past ``k`` keep whatever
they held; no valid sequence start reaches them.

Both directions are sparse resource ops (a gather and a strided-slice
assignment): neither reads the whole variable, which after scatter updates
would copy all of it.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

Trackable: Any = tf.__internal__.tracking.Trackable  # the base of everything a checkpoint can hold

PRIORITIES = "priorities"
RING_SIZE = "rows_per_env"  # positions are times modulo it, so rows only fit rings of the same size


def _rows_key(i: int) -> str:
    return f"rows_{i}"


class FilledRows(Trackable):
    """The checkpointed view of a :class:`~rlengine.learn.replay.buffer.ReplayBuffer`'s rows and priorities.

    A plain ``Trackable``: its reference to the buffer is not a checkpoint
    dependency (the buffer is the parent).
    """

    def __init__(self, buffer: Any):
        self._buffer = buffer

    def __repr__(self) -> str:  # named in TensorFlow's error when a checkpoint lacks it (one written before)
        return "<the replay buffer's written rows>"

    def _positions(self, filled: Any) -> Any:
        """``[num_envs, filled]`` int64 positions ``0 .. filled - 1`` of every ring."""
        return tf.broadcast_to(tf.range(filled)[None, :], tf.stack([tf.constant(self._buffer.num_envs, tf.int64),
                                                                    filled]))

    def _is_full(self, filled: Any) -> bool:
        """Whether ``filled`` is every position (known eagerly only): then plain whole-variable ops are fastest."""
        return tf.executing_eagerly() and int(filled) == self._buffer.rows_per_env

    def _tree_ids(self, positions: Any) -> Any:
        """The sum-tree leaf (flat start id) of each ring position."""
        b = self._buffer
        return b._rings.flat_id(tf.range(b.num_envs, dtype=tf.int64)[:, None], positions)

    def _serialize_to_tensors(self) -> dict:
        b = self._buffer
        filled = tf.reduce_max(tf.minimum(b._head.read_value(), b.rows_per_env))  # the most rows a ring holds
        tensors = {RING_SIZE: tf.constant(b.rows_per_env, tf.int64)}
        if self._is_full(filled):  # every row: the variables as they are, read without a copy
            tensors.update({_rows_key(i): var.read_value_no_copy() for i, var in enumerate(b._storage)})
            if b.prioritized:
                leaves = b._tree.leaves.read_value_no_copy()
                leaves = leaves if leaves.shape[0] == b.capacity else leaves[:b.capacity]  # no padding leaves
                tensors[PRIORITIES] = tf.reshape(leaves, [b.num_envs, b.rows_per_env])
            return tensors
        positions = self._positions(filled)
        for i, var in enumerate(b._storage):  # [num_envs, filled, ...]: gathered, so the rest is never read
            tensors[_rows_key(i)] = tf.raw_ops.ResourceGather(resource=var.handle, indices=positions,
                                                              dtype=var.dtype, batch_dims=1)
        if b.prioritized:
            tensors[PRIORITIES] = b._tree.leaves.sparse_read(self._tree_ids(positions))
        return tensors

    def _restore_from_tensors(self, restored_tensors: dict) -> Any:
        b = self._buffer
        _check_ring_size(restored_tensors[RING_SIZE], b.rows_per_env)
        rows = [restored_tensors[_rows_key(i)] for i in range(len(b._storage))]
        for value, spec in zip(rows, b._rings.stored_specs):  # one frame per row of a frame-stacked leaf
            _check_ring_slice(value, spec, b.num_envs, b.rows_per_env)
        filled = tf.shape(rows[0], out_type=tf.int64)[1]
        full = self._is_full(filled)
        end = tf.stack([tf.constant(b.num_envs, tf.int64), filled])
        for var, value in zip(b._storage, rows):
            if full:
                var.assign(value)
            else:  # rows [:, :filled] only
                tf.raw_ops.ResourceStridedSliceAssign(ref=var.handle, begin=tf.zeros([2], tf.int64), end=end,
                                                      strides=tf.ones([2], tf.int64), value=value)
        if b.prioritized:
            b._tree.rebuild(self._tree_ids(self._positions(filled)), restored_tensors[PRIORITIES])
        return tf.no_op()


def _check_ring_size(saved: Any, per_env: int) -> None:
    if tf.executing_eagerly() and int(saved) != per_env:
        raise ValueError(f"replay buffer: the checkpoint's rings hold {int(saved)} rows each, this buffer's "
                         f"{per_env} (another replay capacity or num_envs)")


def _check_ring_slice(value: Any, spec: Any, num_envs: int, per_env: int) -> None:
    """Refuse (ValueError: the checkpoint does not fit this run) a slice shaped for another buffer."""
    shape = value.shape
    fits = (shape.rank == 2 + spec.shape.rank and shape[0] in (None, num_envs)
            and (shape[1] is None or shape[1] <= per_env) and spec.shape.is_compatible_with(shape[2:]))
    if not fits:
        raise ValueError(f"replay buffer: the checkpoint holds rows of shape {shape.as_list()}, this buffer keeps "
                         f"{num_envs} rings of {per_env} rows of shape {spec.shape.as_list()} (another environment, or "
                         "frame stacks stored once per row by one buffer and not the other)")
