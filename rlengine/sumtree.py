"""A sum tree in one ``tf.Variable``, for prioritized replay.

Prioritized sampling draws item ``i`` with probability ``p_i / sum(p)``.
A binary tree whose every node holds the sum of its two children turns
both the draw and a priority change into ``O(log n)`` work, and both are
vectorised over a whole batch here, so one graph op per tree level serves
every item of the batch.

Layout: node 1 is the root, node ``k`` has children ``2k`` and ``2k + 1``,
and the ``capacity`` leaves (a power of two) are nodes
``[capacity, 2 * capacity)``; node 0 is unused. Leaves past the number of
items stay zero and so are never drawn.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf


def next_pow2(n: int) -> int:
    """Smallest power of two ``>= n`` (and ``>= 1``)."""
    return 1 << max(int(n) - 1, 0).bit_length()


class SumTree(tf.Module):
    """Non-negative float32 priorities of ``num_items`` items, with their sums.

    float32 keeps the tree at ``8 * next_pow2(num_items)`` bytes. Parents
    are always recomputed from their children (never incremented), so
    rounding errors do not accumulate over many updates, and the descent
    never steps into a subtree whose sum is zero (see :meth:`find`), so
    items of priority zero are never drawn.
    """

    def __init__(self, num_items: int, name: str = "sum_tree"):
        super().__init__(name=name)
        self.num_items = int(num_items)
        self.capacity = next_pow2(self.num_items)
        self.depth = self.capacity.bit_length() - 1  # levels below the root
        self.nodes = tf.Variable(tf.zeros([2 * self.capacity], tf.float32), trainable=False, name="nodes")

    def total(self) -> Any:
        """Sum of all priorities (float32 scalar).

        A sparse read: slicing the variable would first read (and, once sparse
        ops have touched it, copy) the whole tree.
        """
        return self.nodes.sparse_read(1)

    def get(self, ids: Any) -> Any:
        """Priorities of the items ``ids`` (int64 ``[n]``)."""
        return self.nodes.sparse_read(ids + self.capacity)

    def set(self, ids: Any, values: Any) -> None:
        """Write leaves, then recompute every ancestor of them, level by level.

        Duplicate ids in one call are allowed: which value wins is unspecified,
        but every parent is recomputed from its children after the leaves are
        written, so the sums always match the leaves. Writes to the same
        parent from duplicate paths carry the same value.
        """
        node = tf.cast(ids, tf.int64) + self.capacity
        self.nodes.scatter_nd_update(node[:, None], tf.cast(values, tf.float32))
        # The depth is static, so the levels are unrolled; resource ops on the
        # same variable run in program order, so each level reads the one below.
        for _ in range(self.depth):
            node = node // 2
            sums = self.nodes.sparse_read(2 * node) + self.nodes.sparse_read(2 * node + 1)
            self.nodes.scatter_nd_update(node[:, None], sums)

    def clear(self) -> None:
        self.nodes.assign(tf.zeros_like(self.nodes))

    def find(self, mass: Any) -> Any:
        """Item ids whose cumulative-sum interval holds each of ``mass`` (float32 ``[n]``).

        Walks all queries down together, one ``tf.while_loop`` step per level.
        Float rounding can leave a query slightly above a node's true sum, so
        a query only goes right when the right subtree has mass and only goes
        left when the left one has: whenever the root is positive every query
        ends on a leaf of positive priority.
        """
        node = tf.ones_like(mass, dtype=tf.int64)

        def descend(level, node, mass):
            left = 2 * node
            left_sum = self.nodes.sparse_read(left)
            right_sum = self.nodes.sparse_read(left + 1)
            go_right = tf.logical_or(tf.logical_and(mass >= left_sum, right_sum > 0.0), left_sum <= 0.0)
            mass = tf.where(go_right, mass - left_sum, mass)
            return level + 1, tf.where(go_right, left + 1, left), mass

        _, node, _ = tf.while_loop(lambda level, *_: level < self.depth, descend,
                                   (tf.constant(0), node, tf.cast(mass, tf.float32)))
        return node - self.capacity

    def sample_stratified(self, batch_size: int) -> Any:
        """Draw ``batch_size`` ids: one uniform draw in each of as many equal slices of the mass.

        Stratifying lowers the variance of a batch compared to independent
        draws, while each draw is still distributed in proportion to priority.
        """
        total = self.total()
        slot = tf.range(batch_size, dtype=tf.float32) + tf.random.uniform([batch_size], dtype=tf.float32)
        mass = tf.minimum(slot * (total / batch_size), total)
        return self.find(mass)
