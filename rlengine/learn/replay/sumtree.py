"""A blocked sum tree in two ``tf.Variable`` s, for prioritized replay.

Prioritized sampling draws item ``i`` with probability ``p_i / sum(p)``.
A binary tree whose every node holds the sum of its two children turns
both the draw and a priority change into ``O(log n)`` work, and both are
vectorised over a whole batch here, so one graph op per tree level serves
every item of the batch.

Layout: the priorities themselves live in ``leaves`` (float32
``[num_blocks * block_size]``), grouped in blocks of ``block_size``
consecutive items. The binary tree ``nodes`` is built over the *block sums*
only: node 1 is the root, node ``k`` has children ``2k`` and ``2k + 1``, and
the sum of block ``b`` is node ``block_capacity + b`` (``block_capacity`` a
power of two); node 0 is unused. A draw walks down to a block, then picks the
item within it from a cumulative sum over its ``block_size`` leaves.

So the tree costs about ``(1 + 2 / block_size) * num_items`` floats instead
of ``2 * next_pow2(num_items)``: with the default blocks of 8, about 5 bytes
per item instead of up to 16. Leaves and blocks past the number of items
stay zero and so are never drawn.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from rlengine.api import seeding

#: Items per leaf block. Larger blocks shrink the tree over the blocks (and
#: its depth) but make each in-block pick read more leaves.
DEFAULT_BLOCK_SIZE = 8


def _block_sums(blocks: Any) -> Any:
    """Row sums of ``[n, block_size]`` leaves, added left to right.

    Not ``reduce_sum``: its order of additions may depend on the shape, and
    :meth:`SumTree.rebuild` must reproduce the sums of :meth:`SumTree.set`
    exactly, whatever number of blocks either sums at once.
    """
    total = blocks[:, 0]
    for j in range(1, blocks.shape[1]):
        total = total + blocks[:, j]
    return total


def next_pow2(n: int) -> int:
    """Smallest power of two ``>= n`` (and ``>= 1``)."""
    return 1 << max(int(n) - 1, 0).bit_length()


class SumTree(tf.Module):
    """Non-negative float32 priorities of ``num_items`` items, with their sums.

    Memory: ``4 * num_blocks * block_size`` bytes of leaves plus
    ``8 * next_pow2(num_blocks)`` bytes of block sums and their ancestors.
    Block sums and parents are always recomputed from their children (never
    incremented), so rounding errors do not accumulate over many updates, and
    the draw never steps into a subtree or onto a leaf whose mass is zero
    (see :meth:`find`), so items of priority zero are never drawn.
    """

    def __init__(self, num_items: int, block_size: int = DEFAULT_BLOCK_SIZE, name: str = "sum_tree"):
        super().__init__(name=name)
        if block_size < 1:
            raise ValueError(f"sum tree: block_size={block_size} must be >= 1")
        self.num_items = int(num_items)
        self.block_size = int(block_size)
        self.num_blocks = max(-(-self.num_items // self.block_size), 1)
        self.block_capacity = next_pow2(self.num_blocks)
        self.depth = self.block_capacity.bit_length() - 1  # levels below the root
        self.leaves = tf.Variable(tf.zeros([self.num_blocks * self.block_size], tf.float32), trainable=False,
                                  name="leaves")
        self.nodes = tf.Variable(tf.zeros([2 * self.block_capacity], tf.float32), trainable=False, name="nodes")

    def total(self) -> Any:
        """Sum of all priorities (float32 scalar).

        A sparse read: slicing the variable would first read (and, once sparse
        ops have touched it, copy) the whole tree.
        """
        return self.nodes.sparse_read(1)

    def get(self, ids: Any) -> Any:
        """Priorities of the items ``ids`` (int64 ``[n]``)."""
        return self.leaves.sparse_read(ids)

    def _block_leaves(self, block: Any) -> Any:
        """The leaves of each of ``block`` (int64 ``[n]``), float32 ``[n, block_size]``."""
        offsets = tf.range(self.block_size, dtype=tf.int64)
        return self.leaves.sparse_read(block[:, None] * self.block_size + offsets[None, :])

    def set(self, ids: Any, values: Any) -> None:
        """Write leaves, then recompute their block sums and every ancestor, level by level.

        Duplicate ids in one call are allowed: which value wins is unspecified,
        but every block sum and parent is recomputed from its children after
        the leaves are written, so the sums always match the leaves. Writes to
        the same node from duplicate paths carry the same value.
        """
        ids = tf.cast(ids, tf.int64)
        self.leaves.scatter_nd_update(ids[:, None], tf.cast(values, tf.float32))
        # Resource ops on the same variable run in program order, so the block
        # read sees the leaves just written, and each level reads the one below.
        block = ids // self.block_size
        node = block + self.block_capacity
        self.nodes.scatter_nd_update(node[:, None], _block_sums(self._block_leaves(block)))
        # The depth is static, so the levels are unrolled.
        for _ in range(self.depth):
            node = node // 2
            sums = self.nodes.sparse_read(2 * node) + self.nodes.sparse_read(2 * node + 1)
            self.nodes.scatter_nd_update(node[:, None], sums)

    def clear(self) -> None:
        self.leaves.assign(tf.zeros_like(self.leaves))
        self.nodes.assign(tf.zeros_like(self.nodes))

    def rebuild(self, ids: Any, values: Any) -> None:
        """Make ``values`` the leaves ``ids`` and every other leaf zero, and recompute every sum.

        For restoring a checkpoint that holds only the leaves in use. The sums
        come out bit for bit as :meth:`set` leaves them: block sums add the
        same leaves in the same order, parents are the sum of two children.
        """
        leaves = tf.scatter_nd(tf.reshape(tf.cast(ids, tf.int64), [-1, 1]),
                               tf.reshape(tf.cast(values, tf.float32), [-1]), tf.shape(self.leaves, out_type=tf.int64))
        level = _block_sums(tf.reshape(leaves, [self.num_blocks, self.block_size]))
        levels = [tf.pad(level, [[0, self.block_capacity - self.num_blocks]])]  # node block_capacity + b
        for _ in range(self.depth):
            levels.append(levels[-1][0::2] + levels[-1][1::2])  # node k = 2k + (2k + 1), one level up
        self.leaves.assign(leaves)
        self.nodes.assign(tf.concat([tf.zeros([1], tf.float32), *reversed(levels)], 0))  # node 0 is unused

    def find(self, mass: Any) -> Any:
        """Item ids whose cumulative-sum interval holds each of ``mass`` (float32 ``[n]``).

        Walks all queries down the block tree together, one ``tf.while_loop``
        step per level, then picks within the block reached. Float rounding
        can leave a query slightly above a node's true sum, so a query only
        goes right when the right subtree has mass and only goes left when the
        left one has; within the block it takes the last positive leaf whose
        interval starts at or below the query (else the first positive leaf):
        whenever the root is positive every query ends on a leaf of positive
        priority.
        """
        node = tf.ones_like(mass, dtype=tf.int64)

        def descend(level, node, mass):
            left = 2 * node
            left_sum = self.nodes.sparse_read(left)
            right_sum = self.nodes.sparse_read(left + 1)
            go_right = tf.logical_or(tf.logical_and(mass >= left_sum, right_sum > 0.0), left_sum <= 0.0)
            mass = tf.where(go_right, mass - left_sum, mass)
            return level + 1, tf.where(go_right, left + 1, left), mass

        _, node, mass = tf.while_loop(lambda level, *_: level < self.depth, descend,
                                      (tf.constant(0), node, tf.cast(mass, tf.float32)))
        block = node - self.block_capacity
        leaves = self._block_leaves(block)
        starts = tf.cumsum(leaves, axis=1, exclusive=True)  # where each leaf's interval begins
        positive = leaves > 0.0
        offsets = tf.range(self.block_size, dtype=tf.int64)
        hit = tf.logical_and(positive, starts <= mass[:, None])
        last_hit = tf.reduce_max(tf.where(hit, offsets[None, :], tf.constant(-1, tf.int64)), axis=1)
        first_positive = tf.argmax(tf.cast(positive, tf.int32), axis=1, output_type=tf.int64)
        return block * self.block_size + tf.where(last_hit >= 0, last_hit, first_positive)

    def sample_stratified(self, batch_size: int) -> Any:
        """Draw ``batch_size`` ids: one uniform draw in each of as many equal slices of the mass.

        Stratifying lowers the variance of a batch compared to independent
        draws, while each draw is still distributed in proportion to priority.
        """
        total = self.total()
        uniform = tf.random.stateless_uniform([batch_size], seeding.seed(), dtype=tf.float32)
        slot = tf.range(batch_size, dtype=tf.float32) + uniform
        mass = tf.minimum(slot * (total / batch_size), total)
        return self.find(mass)
