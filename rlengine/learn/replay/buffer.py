"""The replay buffer of off-policy algorithms: one ring of rows per environment copy.

Rows (time steps, see :mod:`rlengine.api.data`) arrive batched over environment
copies. A sampled sequence must be consecutive steps of *one* copy, so the
buffer keeps a separate ring per copy: each leaf of the experience nest is
one preallocated variable ``[num_envs, per_env, ...]`` with
``per_env = capacity // num_envs``, and ``head[e]`` counts the rows copy ``e``
has ever written. Nothing else grows with the capacity, except the sum tree
of prioritized replay. Only *valid* sequence starts (all their rows written,
none overwritten: :mod:`rlengine.learn.replay.rings`) are ever sampled, so a
sequence never crosses the write head and never mixes two copies.

Frame-stacked observation leaves (``frame_stacks``) keep only each row's
newest frame; reads rebuild the stacks from the rows before (see
:mod:`rlengine.learn.replay.frames`), so for pixels a row costs about one frame.

Every method works eagerly and inside ``tf.function(autograph=False)``: no
Python control flow depends on tensor values, and all reads and writes are
sparse resource ops (no full copy of the storage per call).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import tensorflow as tf

from rlengine.api import seeding
from rlengine.api.data import Nest, StepType
from rlengine.api.specs import check_nest
from rlengine.learn.replay import frames as frames_lib
from rlengine.learn.replay.checkpoint import FilledRows
from rlengine.learn.replay.rings import Rings, bytes_needed, env_ids_of
from rlengine.learn.replay.sumtree import SumTree

#: Added to priorities before the exponent, so a zero loss still leaves a
#: sequence a small chance of being drawn again.
PRIORITY_EPS = 1e-6


def rows_to_store(experience: Any, begin: Any = 1) -> Any:
    """Rows ``begin..T`` of a ``[T + 1, B]`` unroll in time order, flattened to ``[N]``: one replay add
    (one sum-tree update) per unroll. Row 0 repeats the previous unroll's last row, so usually begin = 1."""
    return tf.nest.map_structure(lambda x: tf.reshape(x[begin:], [-1, *x.shape[2:]]), experience)


def kept_in_replay(experience: Any, algorithm: Any) -> Any:
    """What replay keeps of an experience (or of its spec): the policy state only for an algorithm that starts
    sampled sequences from it (``use_rollout_state``). Any other state, such as exploration noise held across
    steps, would cost replay memory for nothing: training starts from the initial state."""
    return experience if algorithm.use_rollout_state else experience._replace(state=())


class Sample(NamedTuple):
    """What :meth:`ReplayBuffer.sample` returns."""

    experience: Nest  # nest of [batch_size, sequence_length, ...] (batch-major)
    indices: Any  # int64 [batch_size]: flat ids (env * per_env + position) of the starts
    weights: Any  # float32 [batch_size]: importance weights / their max (ones when uniform)


class ReplayBuffer(tf.Module):
    """Fixed-size replay of experience rows, uniform or prioritized over sequence starts."""

    def __init__(self, experience_spec: Nest, num_envs: int, capacity: int, *, sequence_length: int = 2,
                 prioritized: bool = False, priority_alpha: float = 0.6, frame_stacks: Any = None,
                 name: str = "replay_buffer"):
        """``frame_stacks``: None, or per leaf of the flattened spec None or ``(axis, frames)`` (axis of the
        leaf's own shape): that leaf is a stack of ``frames`` frames, the newest last, stored once each."""
        super().__init__(name=name)
        if num_envs < 1 or sequence_length < 1:
            raise ValueError(f"replay buffer: num_envs={num_envs} and sequence_length={sequence_length} must be >= 1")
        if capacity < num_envs * sequence_length:
            raise ValueError(f"replay buffer: capacity={capacity} is below num_envs * sequence_length = "
                             f"{num_envs} * {sequence_length}; every ring must hold one whole sequence")
        env_spec = env_ids_of(experience_spec)
        if not env_spec.dtype.is_integer or env_spec.shape.rank != 0:
            raise ValueError(f"replay buffer: env_id must be a scalar integer per row, got {env_spec}")
        self._rings = Rings(experience_spec, num_envs, capacity // num_envs, sequence_length, frame_stacks)
        self.prioritized = bool(prioritized)
        self.priority_alpha = float(priority_alpha)
        with self.name_scope:
            shape = [num_envs, self._rings.per_env]
            self._storage = [tf.Variable(tf.zeros(shape + list(s.shape), s.dtype), trainable=False, name=f"rows_{i}")
                             for i, s in enumerate(self._rings.stored_specs)]
            self._head = tf.Variable(tf.zeros([num_envs], tf.int64), trainable=False, name="head")
            if self.prioritized:
                self._tree = SumTree(num_envs * self._rings.per_env)
                # Stored-space (already ** alpha) priority given to new starts.
                self._max_priority = tf.Variable(1.0, trainable=False, name="max_priority")
        self._filled = FilledRows(self)  # what checkpoints hold of the rows and the tree (see below)

    def _trackable_children(self, save_type: Any = "checkpoint", **kwargs: Any) -> dict:
        """A checkpoint holds the written rows (``_filled``), not the preallocated variables themselves."""
        children = super()._trackable_children(save_type, **kwargs)
        if save_type == "checkpoint":
            children.pop("_storage", None)
            children.pop("_tree", None)
        return children

    @staticmethod
    def bytes_needed(experience_spec: Nest, num_envs: int, capacity: int, prioritized: bool = False,
                     frame_stacks: Any = None) -> int:
        """Bytes the buffer's variables will take: its rows, heads and (prioritized) sum tree.

        Known before anything is allocated, so a capacity the machine cannot
        hold is refused with a figure instead of an out-of-memory traceback.
        """
        return bytes_needed(experience_spec, num_envs, capacity, prioritized, frame_stacks)
    # -- facts ----------------------------------------------------------------
    @property
    def num_envs(self) -> int:
        return self._rings.num_envs

    @property
    def rows_per_env(self) -> int:
        return self._rings.per_env

    @property
    def sequence_length(self) -> int:
        return self._rings.length

    @property
    def capacity(self) -> int:
        """Rows actually held: ``num_envs * (capacity // num_envs)``."""
        return self._rings.num_envs * self._rings.per_env

    def num_rows(self) -> Any:
        """Valid rows over all copies (int64 scalar)."""
        return tf.reduce_sum(tf.minimum(self._head.read_value(), self._rings.per_env))

    def can_sample(self) -> Any:
        """True once at least one copy holds a whole sequence (bool scalar)."""
        return tf.reduce_any(tf.minimum(self._head.read_value(), self._rings.per_env) >= self._rings.length)

    # -- writing ----------------------------------------------------------------
    def add(self, rows: Nest) -> None:
        """Append ``rows`` (leading ``[B]``) to the rings named by their ``env_id``.

        Usually one row per copy, but several rows of one copy may come in one
        call (e.g. a ``[T, B]`` unroll flattened time-major): rows of the same
        copy are written in the order they appear, at most ``rows_per_env`` each.
        """
        check_nest("replay buffer", "add() rows", self._rings.spec, rows)
        env = tf.cast(env_ids_of(rows), tf.int64)
        rank, counts = self._rings.ranks(env)
        head = self._head.read_value()
        time = tf.gather(head, env) + rank  # absolute time of each row within its copy
        index = self._rings.index(env, time)
        for var, value, stack in zip(self._storage, tf.nest.flatten(rows), self._rings.frame_stacks):
            var.scatter_nd_update(index, value if stack is None else frames_lib.newest_frame(value, stack))
        new_head = head + counts
        self._head.assign(new_head)
        if self.prioritized:
            self._refresh_new_starts(env, time, new_head)

    def _refresh_new_starts(self, env: Any, time: Any, head: Any) -> None:
        """Set the tree leaves whose validity this add changed.

        Those are the written positions (overwritten or too new: zero, unless
        their sequence completed in this same call) and the starts whose
        sequence the new rows complete (max priority). Each leaf's value is
        derived from the new heads alone, so duplicates carry equal values.
        None of them held a learned priority worth keeping.
        """
        envs = tf.concat([env, env], 0)
        starts = tf.concat([time, time - (self._rings.length - 1)], 0)
        pos = tf.math.floormod(starts, self._rings.per_env)
        valid = self._rings.start_is_valid(envs, pos, head)
        values = tf.where(valid, self._max_priority.read_value(), 0.0)
        self._tree.set(self._rings.flat_id(envs, pos), values)

    def update_priorities(self, indices: Any, priorities: Any) -> None:
        """Give the sampled starts ``indices`` new priorities (stored as ``(p + eps) ** alpha``).

        Starts that stopped being valid since they were sampled (overwritten)
        keep priority zero.
        """
        self._require_prioritized("update_priorities")
        ids = tf.cast(indices, tf.int64)
        p = tf.cast(priorities, tf.float32)
        check = tf.debugging.assert_non_negative(p, message="replay buffer: priorities must be finite and >= 0")
        with tf.control_dependencies([check]):
            stored = tf.pow(p + PRIORITY_EPS, self.priority_alpha)
        env, pos = self._rings.env_and_pos(ids)
        valid = self._rings.start_is_valid(env, pos, self._head.read_value())
        self._tree.set(ids, tf.where(valid, stored, 0.0))
        self._max_priority.assign(tf.maximum(self._max_priority, tf.reduce_max(stored)))

    def mark_newest_rows_last(self, env_ids: Any = None) -> None:
        """Turn each copy's newest row (or only those of ``env_ids``) into a LAST step: its episode is cut there.

        For a resumed run that could not restore its environments: they start
        new episodes, and without the mark the newest stored row and the next
        FIRST row would replay as one transition that never happened. Algorithms
        start no transition at a LAST row and stop n-step returns there; the
        row's discount is kept, so the transition into it still bootstraps
        (like a time limit).
        """
        leaf = self._rings.step_type_leaf
        if leaf is None:
            raise ValueError("replay buffer: mark_newest_rows_last() needs a 'step_type' field in the experience")
        head = self._head.read_value()
        envs = tf.where(head > 0)[:, 0]
        if env_ids is not None:  # e.g. the copies of one async env thread whose environment was recreated
            wanted = tf.cast(tf.reshape(env_ids, [-1]), tf.int64)
            envs = tf.boolean_mask(wanted, tf.gather(head, wanted) > 0)
        index = self._rings.index(envs, tf.gather(head, envs) - 1)
        storage = self._storage[leaf]
        storage.scatter_nd_update(index, tf.fill(tf.shape(envs), tf.constant(StepType.LAST, storage.dtype)))

    def clear(self) -> None:
        """Forget every row; the storage is left as is and simply becomes unreachable."""
        self._head.assign(tf.zeros_like(self._head))
        if self.prioritized:
            self._tree.clear()
            self._max_priority.assign(1.0)

    def _require_prioritized(self, what: str) -> None:
        if not self.prioritized:
            raise ValueError(f"replay buffer: {what}() needs prioritized=True")

    # -- reading ----------------------------------------------------------------
    def held_rows(self, env: int) -> Nest:
        """Every row copy ``env``'s ring holds, oldest first (leading ``[rows]``), frame stacks rebuilt."""
        head = self._head.read_value()
        newest = head[env]
        time = tf.range(self._rings.oldest(newest), newest, dtype=tf.int64)[None, :]
        rows = self._read(tf.fill(tf.shape(time), tf.constant(env, tf.int64)), time, head)
        return tf.nest.map_structure(lambda leaf: leaf[0], rows)

    def sample(self, batch_size: int, beta: Any = 0.4) -> Sample:
        """Draw ``batch_size`` sequences of ``sequence_length`` consecutive rows of one copy each."""
        if self.prioritized:
            env, pos, weights = self._draw_prioritized(batch_size, beta)
        else:
            env, pos = self._draw_uniform(batch_size)
            weights = tf.ones([batch_size], tf.float32)
        head = self._head.read_value()
        h = tf.gather(head, env)
        start = self._rings.time_held(h, pos)
        time = start[:, None] + tf.range(self._rings.length, dtype=tf.int64)[None, :]
        experience = self._read(tf.broadcast_to(env[:, None], tf.shape(time)), time, head)
        return Sample(experience, self._rings.flat_id(env, pos), weights)

    def _draw_uniform(self, batch_size: int) -> tuple:
        """A copy uniformly among those ready, then a start uniformly among its valid ones."""
        head = self._head.read_value()
        counts = self._rings.valid_start_counts(head)
        ready = tf.where(counts > 0)[:, 0]
        num_ready = tf.size(ready, out_type=tf.int64)
        check = tf.debugging.assert_positive(num_ready, message=self._rings.too_few_rows_message())
        with tf.control_dependencies([check]):
            env = tf.gather(ready, tf.random.stateless_uniform([batch_size], seeding.seed(), 0, num_ready,
                                                               dtype=tf.int64))
        count = tf.gather(counts, env)
        # Per-row maxval: scale a uniform float; float64 keeps the bias negligible.
        uniform = tf.random.stateless_uniform([batch_size], seeding.seed(), dtype=tf.float64)
        offset = tf.cast(tf.floor(uniform * tf.cast(count, tf.float64)), tf.int64)
        oldest = self._rings.oldest(tf.gather(head, env))
        pos = tf.math.floormod(oldest + tf.minimum(offset, count - 1), self._rings.per_env)
        return env, pos

    def _draw_prioritized(self, batch_size: int, beta: Any) -> tuple:
        """Stratified draw from the sum tree, with importance weights ``(N * P(i)) ** -beta / max``."""
        total = self._tree.total()
        check = tf.debugging.assert_positive(total, message=self._rings.too_few_rows_message())
        with tf.control_dependencies([check]):
            ids = self._tree.sample_stratified(batch_size)
        prob = self._tree.get(ids) / total
        num_valid = tf.cast(tf.reduce_sum(self._rings.valid_start_counts(self._head.read_value())), tf.float32)
        weights = tf.pow(num_valid * prob, -tf.cast(beta, tf.float32))
        weights = weights / tf.reduce_max(weights)
        return (*self._rings.env_and_pos(ids), weights)

    def gather_all(self) -> Nest:
        """Every held row, ``[num_envs, rows, ...]`` in time order per copy.

        For replaying everything (e.g. on-policy reuse); every copy must hold
        the same number of rows, which is the case when rows always arrive
        one per copy.
        """
        head = self._head.read_value()
        filled = tf.minimum(head, self._rings.per_env)
        check = tf.debugging.assert_equal(filled, filled[0], message=(
            "replay buffer: gather_all() needs every environment copy to hold the same number of rows"))
        with tf.control_dependencies([check]):
            steps = tf.range(filled[0])
        time = self._rings.oldest(head)[:, None] + steps[None, :]
        envs = tf.broadcast_to(tf.range(self._rings.num_envs, dtype=tf.int64)[:, None], tf.shape(time))
        return self._read(envs, time, head)

    def _read(self, env: Any, time: Any, head: Any) -> Nest:
        """The rows at absolute ``time`` (held ones) of rings ``env`` (same shape), frame stacks rebuilt."""
        index = self._rings.index(env, time)
        sources: dict = {}  # frames -> source times, shared by the leaves stacking as many frames
        flat = []
        for var, stack in zip(self._storage, self._rings.frame_stacks):
            if stack is None:
                flat.append(var.gather_nd(index))
                continue
            if stack.frames not in sources:
                sources[stack.frames] = self._frame_sources(env, time, head, stack.frames)
            source = sources[stack.frames]
            frames = var.gather_nd(self._rings.index(tf.broadcast_to(env[..., None], tf.shape(source)), source))
            flat.append(frames_lib.restack(frames, stack, time.shape.rank))
        return tf.nest.pack_sequence_as(self._rings.spec, flat)

    def _frame_sources(self, env: Any, time: Any, head: Any, frames: int) -> Any:
        """Times ``[..., frames]`` of the rows holding the frames of rows ``time`` (see replay_frames)."""
        oldest = self._rings.oldest(tf.gather(head, env))
        step_types = self._storage[self._rings.step_type_leaf]

        def step_types_at(times: Any) -> Any:
            return step_types.gather_nd(self._rings.index(tf.broadcast_to(env[..., None], tf.shape(times)), times))

        return frames_lib.frame_sources(time, oldest, step_types_at, frames)
