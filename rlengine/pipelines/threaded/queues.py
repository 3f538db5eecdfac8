"""The bounded TensorFlow queues of the asynchronous pipeline, built from the run's specs.

Data flows through three kinds of queue::

    env thread i ──request──▶ actor queue (i % num_actors) ──▶ actor thread
    env thread i ◀──actions── return queue i ◀──────────────── actor thread
    env thread i ──unroll───▶ learner queue ──────────────────▶ learner (main thread)

With no actor threads (``async.num_actor_threads = 0``) each env thread
computes its own actions and only the learner queue exists.

A nest is flattened into the queue's components and packed again on the
way out, so any structure the algorithm chose for its state and info
travels as plain tensors. Requests and unrolls of different env threads
may have different batch sizes, so those queues leave shapes unset and the
reader restores them with ``ensure_shape``.

Closing every queue (:meth:`RunQueues.close_all`) wakes every thread
blocked on one: a blocked enqueue is cancelled, a dequeue on an empty
closed queue fails with ``OutOfRangeError``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import tensorflow as tf

from rlengine.api.data import Nest, TimeStep
from rlengine.api.specs import RunSpecs
from rlengine.collect.converters import params_spec


class Request(NamedTuple):
    """What an env thread asks its actor: act on these rows."""

    time_step: TimeStep  # transformed, [B_i, ...]
    state: Nest  # policy state, already reset where the step is FIRST
    thread: Any  # int32 scalar: the env thread to answer


class Answer(NamedTuple):
    """What an actor returns to one env thread."""

    action: Nest
    state: Nest  # the policy state after this step
    info: Nest  # rollout info, distributions as parameters
    version: Any  # int64 scalar: the policy version that acted


class Unroll(NamedTuple):
    """What an env thread hands to the learner."""

    experience: Nest  # Experience [T + 1, B_i, ...]; row 0 repeats the previous unroll's last row
    version: Any  # int64 scalar: the oldest policy version that acted in it
    thread: Any  # int32 scalar
    broken: Any  # bool scalar: the environment was recreated during it (drop it, cut the stored episodes)


class NestQueue:
    """A ``tf.queue.FIFOQueue`` of one nest structure."""

    def __init__(self, structure: Nest, capacity: int, name: str, shapes: list | None = None,
                 handle: Any = None):
        self.structure = structure  # a nest of TensorSpecs, without the outer dimensions
        self._flat = tf.nest.flatten(structure)
        self.capacity, self.name, self._shapes = capacity, name, shapes
        dtypes = [s.dtype for s in self._flat]
        if handle is None:
            self.queue = tf.queue.FIFOQueue(capacity, dtypes, shapes=shapes, name=name)
        else:  # a view of an existing queue, e.g. a handle passed into a tf.function
            self.queue = tf.queue.QueueBase(dtypes, shapes, None, handle)

    @property
    def handle(self) -> Any:
        return self.queue.queue_ref

    def view(self, handle: Any) -> "NestQueue":
        """The same kind of queue on ``handle``.

        Traced functions take queue handles as arguments, so a restarted
        pipeline's new queues reuse the traced graphs.
        """
        return NestQueue(self.structure, self.capacity, self.name, self._shapes, handle)

    def enqueue(self, nest: Nest) -> Any:
        return self.queue.enqueue(tf.nest.flatten(nest))

    def dequeue(self, outer_shapes: list | tuple) -> Nest:
        """Dequeue one element and restore the dimensions in front of each spec.

        ``outer_shapes`` is one shape (a list) for every leaf, or a tuple
        with one shape per top-level field of the structure.
        """
        flat = self.queue.dequeue()
        flat = flat if isinstance(flat, (list, tuple)) else [flat]
        if isinstance(outer_shapes, list):
            outer = [outer_shapes] * len(self._flat)
        else:
            outer = [shape for field, shape in zip(self.structure, outer_shapes)
                     for _ in tf.nest.flatten(field)]
        shaped = [tf.ensure_shape(t, [*o, *s.shape]) for t, o, s in zip(flat, outer, self._flat)]
        return tf.nest.pack_sequence_as(self.structure, shaped)

    def size(self) -> Any:
        return self.queue.size()

    def close(self) -> None:
        self.queue.close(cancel_pending_enqueues=True)


def _fixed_shapes(structure: Nest, outer_shape: list) -> list:
    return [tf.TensorShape([*outer_shape, *s.shape]) for s in tf.nest.flatten(structure)]


class RunQueues:
    """Every queue of one asynchronous run."""

    def __init__(self, specs: RunSpecs, batch_sizes: list, num_actors: int, actor_capacity: int,
                 learner_capacity: int):
        scalar_int = tf.TensorSpec([], tf.int32)
        version = tf.TensorSpec([], tf.int64)
        self.request_structure = Request(specs.time_step, specs.state, scalar_int)
        self.answer_structure = Answer(specs.action, specs.state, params_spec(specs.rollout_info), version)
        unroll = Unroll(specs.experience, version, scalar_int, tf.TensorSpec([], tf.bool))
        # Shapes left unset where batch sizes differ between env threads.
        self.actors = [NestQueue(self.request_structure, actor_capacity, f"actor_queue_{a}")
                       for a in range(num_actors)]
        self.answers = [NestQueue(self.answer_structure, 1, f"return_queue_{i}",
                                  shapes=_answer_shapes(self.answer_structure, b))
                        for i, b in enumerate(batch_sizes) if num_actors]
        self.learner = NestQueue(unroll, learner_capacity, "learner_queue")

    def all(self) -> list:
        return [*self.actors, *self.answers, self.learner]

    def close_all(self) -> None:
        for q in self.all():
            q.close()

    def fill_levels(self) -> dict:
        """Fraction of capacity in use, per kind of queue (averaged over its queues)."""
        def level(queues: list) -> float:
            return sum(float(q.size()) / q.capacity for q in queues) / len(queues)

        levels = {"async/learner_queue_fill": level([self.learner])}
        if self.actors:
            levels["async/actor_queue_fill"] = level(self.actors)
        return levels


def _answer_shapes(structure: Answer, batch: int) -> list:
    action, state, info, _ = structure
    return [*_fixed_shapes((action, state, info), [batch]), tf.TensorShape([])]
