"""Frame-stacked observation leaves in replay: each frame stored once, the stack rebuilt on reading.

An environment that stacks its last ``k`` frames along an axis (a
:class:`rlengine.FrameStack` leaf) gives at time ``t`` of an episode begun at
``s`` the frames of times ``max(t - (k-1) + j, s)`` in slots ``j = 0 .. k-1``
(the first frame fills the slots before the episode began). Consecutive rows
of one copy so share ``k - 1`` frames: the replay buffer keeps only the newest
one per row (the last ``1/k`` of the stack axis, which stays in the stored
shape) and rebuilds slot ``j`` of row ``t`` from row ``max(t - (k-1) + j, s)``
of the same ring, ``k`` times less memory for that leaf.

``s`` is the newest row at or before ``t`` that is ``FIRST`` or follows a
``LAST`` row. The second case matters after a crash or a resume without the
environments' state: the buffer cuts the episode with a ``LAST`` mark and the
restarted episode's ``FIRST`` row may never be stored, so its next rows must
not reach back into the cut episode (they get their first stored frame as
padding instead of the lost one).

Everything here is sparse gathers and elementwise ops, usable eagerly and
inside ``tf.function(autograph=False)``.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

import tensorflow as tf

from rlengine.api.data import StepType
from rlengine.api.specs import RunSpecs
from rlengine.errors import PluginError


class StackedLeaf(NamedTuple):
    """A frame-stacked leaf: ``frames`` frames along ``axis`` (non-negative, of the leaf's own shape)."""

    axis: int
    frames: int


def checked_frame_stacks(flat_spec: list, frame_stacks: Any) -> list[Optional[StackedLeaf]]:
    """One :class:`StackedLeaf` or None per leaf of ``flat_spec``; ``frames == 1`` saves nothing, so None."""
    if frame_stacks is None:
        return [None] * len(flat_spec)
    frame_stacks = list(frame_stacks)
    if len(frame_stacks) != len(flat_spec):
        raise ValueError(f"replay buffer: frame_stacks has {len(frame_stacks)} entries, the experience spec "
                         f"{len(flat_spec)} leaves; give one (axis, frames) or None per flattened leaf")
    return [_checked_leaf(i, spec, stack) for i, (spec, stack) in enumerate(zip(flat_spec, frame_stacks))]


def _checked_leaf(i: int, spec: Any, stack: Any) -> Optional[StackedLeaf]:
    if stack is None:
        return None
    axis, frames = (int(v) for v in stack)
    rank = spec.shape.rank
    if not -rank <= axis < rank or frames < 1:
        raise ValueError(f"replay buffer: frame stack (axis={axis}, frames={frames}) of leaf {i} does not fit its "
                         f"shape {spec.shape.as_list()}; the axis must be one of its axes and frames >= 1")
    axis %= rank
    if spec.shape[axis] is None or spec.shape[axis] % frames:
        raise ValueError(f"replay buffer: leaf {i} of shape {spec.shape.as_list()} cannot hold {frames} frames "
                         f"along axis {axis} (its size must be a multiple of frames)")
    return None if frames == 1 else StackedLeaf(axis, frames)


def stored_spec(spec: Any, stack: Optional[StackedLeaf]) -> Any:
    """The spec of what a ring keeps per row of the leaf: one frame for a stacked leaf."""
    if stack is None:
        return spec
    shape = spec.shape.as_list()
    shape[stack.axis] //= stack.frames
    return tf.TensorSpec(shape, spec.dtype, spec.name)


def newest_frame(rows: Any, stack: StackedLeaf) -> Any:
    """The newest frame of each row of a ``[N, ...]`` batch of stacks (the last slot along the axis)."""
    size = rows.shape[1 + stack.axis]
    begin = [0] * rows.shape.rank
    begin[1 + stack.axis] = size - size // stack.frames
    return tf.slice(rows, begin, [-1] * rows.shape.rank)


def frame_sources(time: Any, oldest: Any, step_types_at: Any, frames: int) -> Any:
    """Absolute times ``[..., frames]`` of the rows whose stored frames rebuild the stacks of rows ``time``.

    ``oldest`` (broadcastable to ``time``) is the ring's oldest held row:
    nothing older is read, so a row less than ``frames - 1`` rows after it
    whose episode began earlier is padded with the oldest row's frame. That
    affects at most ``frames - 1`` rows per ring (those right after its
    oldest), and only once its episode's start was overwritten or never held.
    ``step_types_at(times)`` gives the stored step types at any same-ring times.
    """
    back = tf.range(frames, dtype=tf.int64)  # d: row t - d
    times = time[..., None] - back
    step = step_types_at(times)  # rows older than `oldest` give anything: a boundary at `oldest` comes first
    follows_last = tf.concat([tf.equal(step[..., 1:], StepType.LAST), tf.zeros_like(step[..., :1], tf.bool)], -1)
    start = tf.logical_or(tf.equal(step, StepType.FIRST), follows_last)
    start = tf.logical_or(start, times <= tf.convert_to_tensor(oldest, tf.int64)[..., None])
    reach = tf.reduce_min(tf.where(start, back, frames - 1), axis=-1)  # rows back to the episode's first held
    return time[..., None] - tf.minimum(back[::-1], reach[..., None])  # slot j is (frames - 1 - j) rows back


def restack(frames: Any, stack: StackedLeaf, outer_rank: int) -> Any:
    """``[*outer, k, *stored]`` gathered frames (oldest first) -> ``[*outer, *stacked]``, slots along the axis."""
    inner = list(range(outer_rank + 1, frames.shape.rank))
    perm = [*range(outer_rank), *inner[:stack.axis], outer_rank, *inner[stack.axis:]]
    moved = tf.transpose(frames, perm)  # the slot axis just before the frame's own stack axis
    stored = frames.shape[outer_rank + 1:].as_list()
    stacked = stored[:stack.axis] + [stored[stack.axis] * stack.frames] + stored[stack.axis + 1:]
    return tf.reshape(moved, tf.concat([tf.shape(frames)[:outer_rank], stacked], 0))


def replay_frame_stacks(stacked_frames: Any, specs: RunSpecs, env_name: str) -> Any:
    """``ReplayBuffer(frame_stacks=)`` for an environment's declaration: ``(axis, frames)`` or None per leaf of
    the flattened experience spec, or None when no leaf qualifies.

    Observation leaves are matched by their path in the nest, and only those
    the transformers left as the environment made them (same shape and dtype)
    qualify: a transformed leaf (resized, normalized) is no longer the
    environment's stack, so it is simply stored whole.
    """
    if stacked_frames is None:
        return None
    nest = tf.__internal__.nest  # flatten_up_to: a FrameStack is a namedtuple, yet one leaf here
    raw = specs.raw_time_step.observation
    try:
        declared = nest.flatten_up_to(raw, stacked_frames)
        checked_frame_stacks(tf.nest.flatten(raw), [None if d is None else tuple(d) for d in declared])
    except (TypeError, ValueError) as exc:
        raise PluginError(f"environment {env_name!r}: stacked_frames() must be None or a nest like its observation "
                          f"spec of FrameStack(axis, frames) or None per leaf that fits the leaf; {exc}") from None
    by_path = dict(zip(nest.yield_flat_paths(raw), zip(tf.nest.flatten(raw), declared)))
    observation = specs.experience.observation
    num_leaves = len(tf.nest.flatten(specs.experience))
    leaf_ids = tf.nest.pack_sequence_as(specs.experience, list(range(num_leaves)))
    frame_stacks: list = [None] * num_leaves
    for path, spec, i in zip(nest.yield_flat_paths(observation), tf.nest.flatten(observation),
                             tf.nest.flatten(leaf_ids.observation)):
        raw_spec, stack = by_path.get(path, (None, None))
        if stack is not None and raw_spec.shape == spec.shape and raw_spec.dtype == spec.dtype:
            frame_stacks[i] = tuple(stack)  # (axis, frames)
    return frame_stacks if any(frame_stacks) else None
