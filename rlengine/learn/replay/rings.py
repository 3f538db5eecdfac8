"""The replay buffer's rings: their static layout and the arithmetic of absolute times on them.

Copy ``e``'s ring holds ``per_env`` rows; ``head[e]`` counts the rows it has
ever written, and absolute time ``t`` lives at position ``t % per_env``. A
sequence start ``t`` is valid when its ``length`` rows are written and none is
overwritten: ``head - per_env <= t <= head - length``. Every function here is
pure tensor arithmetic on ``head`` (no variable is read), so the buffer reads
its heads once per call and passes them::

    rings = Rings(spec, num_envs, per_env, length, frame_stacks)
    index = rings.index(env, time)                       # [..., 2] storage index
    valid = rings.start_is_valid(env, pos, head)         # may row ``pos`` start a sequence?
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import tensorflow as tf

from rlengine.api.data import Nest
from rlengine.learn.replay import frames as frames_lib
from rlengine.learn.replay.sumtree import DEFAULT_BLOCK_SIZE, next_pow2


class Rings:
    """Static facts about the buffer. A plain object, so tf.Module does not wrap or track it."""

    def __init__(self, spec: Nest, num_envs: int, per_env: int, length: int, frame_stacks: Any = None):
        self.spec = spec
        self.flat_spec = tf.nest.flatten(spec)
        self.frame_stacks = frames_lib.checked_frame_stacks(self.flat_spec, frame_stacks)
        self.stored_specs = [frames_lib.stored_spec(s, f) for s, f in zip(self.flat_spec, self.frame_stacks)]
        self.num_envs = num_envs
        self.per_env = per_env
        self.length = length
        self.step_type_leaf = step_type_leaf(spec)
        if any(self.frame_stacks) and (self.step_type_leaf is None
                                       or self.flat_spec[self.step_type_leaf].shape.rank != 0):
            raise ValueError("replay buffer: frame_stacks need a scalar 'step_type' field in the experience nest "
                             "(stacks are rebuilt within episodes)")

    def index(self, env: Any, time: Any) -> Any:
        """``[..., 2]`` storage index of the rows at absolute ``time`` of rings ``env`` (same shape)."""
        return tf.stack([env, tf.math.floormod(time, self.per_env)], axis=-1)

    def flat_id(self, env: Any, pos: Any) -> Any:
        """The one number ``env * per_env + pos`` naming position ``pos`` of ring ``env``: the sum tree's leaf
        and a sample's index."""
        return env * self.per_env + pos

    def env_and_pos(self, flat_id: Any) -> tuple[Any, Any]:
        """The ring and position a :meth:`flat_id` names."""
        return flat_id // self.per_env, flat_id % self.per_env

    def time_held(self, env_head: Any, pos: Any) -> Any:
        """The absolute time of the row now at ``pos`` of a ring whose head is ``env_head`` (negative: none)."""
        return env_head - 1 - tf.math.floormod(env_head - 1 - pos, self.per_env)

    def oldest(self, env_head: Any) -> Any:
        """The absolute time of the oldest row a ring whose head is ``env_head`` still holds."""
        return tf.maximum(env_head - self.per_env, 0)

    def valid_start_counts(self, head: Any) -> Any:
        """Valid sequence starts of each copy (int64 ``[num_envs]``)."""
        return tf.maximum(tf.minimum(head, self.per_env) - self.length + 1, 0)

    def start_is_valid(self, env: Any, pos: Any, head: Any) -> Any:
        """Whether the row now at ``pos`` of ring ``env`` starts a valid sequence."""
        h = tf.gather(head, env)
        latest = self.time_held(h, pos)
        return tf.logical_and(latest >= 0, latest <= h - self.length)

    def ranks(self, env: Any) -> tuple:
        """Each row's rank among the rows of its copy in one ``add`` (``env``: each row's copy), and the
        rows per copy; the rows' copies and counts are checked first."""
        n = self.num_envs
        checks = [
            tf.debugging.assert_non_negative(env, message="replay buffer: env_id must be >= 0"),
            tf.debugging.assert_less(env, tf.constant(n, tf.int64),
                                     message=f"replay buffer: env_id must be < num_envs={n}"),
        ]
        with tf.control_dependencies(checks):
            counts = tf.math.unsorted_segment_sum(tf.ones_like(env), env, n)
        too_many = tf.debugging.assert_less_equal(
            counts, tf.constant(self.per_env, tf.int64),
            message=f"replay buffer: one add() call holds more than rows_per_env={self.per_env} rows of a copy")
        with tf.control_dependencies([too_many]):
            # Stable sort by copy; rank = place in the sorted run of that copy.
            order = tf.cast(tf.argsort(env, stable=True), tf.int64)
            ordered = tf.gather(env, order)
            first = tf.searchsorted(ordered, ordered, side="left", out_type=tf.int64)
            rank_sorted = tf.range(tf.size(env, out_type=tf.int64)) - first
            rank = tf.scatter_nd(order[:, None], rank_sorted, tf.shape(env, out_type=tf.int64))
        return rank, counts

    def too_few_rows_message(self) -> str:
        return (f"replay buffer: sampling before any environment copy holds mini_batch_length={self.length} rows; "
                f"set initial_collect_steps >= num_envs * mini_batch_length = {self.num_envs * self.length} "
                "(or check can_sample() first)")


def bytes_needed(experience_spec: Nest, num_envs: int, capacity: int, prioritized: bool = False,
                 frame_stacks: Any = None) -> int:
    """Bytes a buffer's variables will take: its rows, heads and (prioritized) sum tree."""
    rows = num_envs * (capacity // num_envs)
    flat_spec = tf.nest.flatten(experience_spec)
    stacks = frames_lib.checked_frame_stacks(flat_spec, frame_stacks)
    row_bytes = sum(s.shape.num_elements() * s.dtype.size for s in map(frames_lib.stored_spec, flat_spec, stacks))
    total = rows * row_bytes + 8 * num_envs  # the int64 heads
    if prioritized:  # float32 leaves in whole blocks, plus the tree over the block sums
        blocks = max(-(-rows // DEFAULT_BLOCK_SIZE), 1)
        total += 4 * blocks * DEFAULT_BLOCK_SIZE + 8 * next_pow2(blocks) + 4  # + the max priority
    return total


def env_ids_of(nest: Nest) -> Any:
    """The ``env_id`` field of an Experience or of a dict nest."""
    if hasattr(nest, "env_id"):
        return nest.env_id
    if isinstance(nest, Mapping) and "env_id" in nest:
        return nest["env_id"]
    raise ValueError("replay buffer: the experience nest has no 'env_id' field to choose rings by")


def step_type_leaf(spec: Nest) -> Any:
    """Index of the ``step_type`` leaf in the flattened nest (an Experience or a dict), or None."""
    leaves = tf.nest.pack_sequence_as(spec, list(range(len(tf.nest.flatten(spec)))))
    if hasattr(leaves, "step_type"):
        return leaves.step_type
    if isinstance(leaves, Mapping):
        return leaves.get("step_type")
    return None
