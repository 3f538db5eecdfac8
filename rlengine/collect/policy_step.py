"""The two halves of one environment step, shared by every pipeline, evaluation and export.

``observe`` is the env side (transform the raw step, reset the policy state
where an episode begins), ``act`` the policy side (rollout, or uniform
random actions during off-policy warm-up); ``greedy`` is the deterministic
step evaluation and exported policies take.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from rlengine.api import Algorithm, seeding
from rlengine.api.data import Nest, PolicyStep, StepType, TimeStep
from rlengine.api.network import action_mask_of
from rlengine.api.specs import RunSpecs
from rlengine.collect.converters import Converters
from rlengine.collect.transformers import TransformerChain
from rlengine.errors import SpecMismatchError


def reset_where_first(step_type: Any, state: Nest, initial: Nest) -> Nest:
    """Replace the rows of ``state`` whose step is FIRST by the initial state."""
    first = tf.equal(step_type, StepType.FIRST)

    def select(s, z):
        mask = tf.reshape(first, [-1] + [1] * (len(s.shape) - 1))
        return tf.where(mask, z, s)

    return tf.nest.map_structure(select, state, initial)


def uniform_action(spec: Nest, batch: int, action_mask: Any = None) -> Nest:
    """Uniformly random actions within the bounds of ``spec`` (initial collection); with an
    ``action_mask`` (``[batch, num_actions]``, nonzero = legal) a single discrete action is drawn
    among the legal ones only (a row with none legal stays uniform)."""

    def sample(s):
        if not hasattr(s, "minimum"):
            raise SpecMismatchError(
                f"uniformly random initial actions need bounded action specs, got {s}; give the environment's "
                "action spec bounds (rlengine.BoundedTensorSpec)")
        shape = [batch, *s.shape]
        low = tf.broadcast_to(tf.cast(s.minimum, s.dtype), s.shape)
        high = tf.broadcast_to(tf.cast(s.maximum, s.dtype), s.shape)
        if s.dtype.is_integer and action_mask is not None and s.shape.rank == 0:
            legal = tf.cast(action_mask, tf.bool)
            legal = tf.logical_or(legal, tf.logical_not(tf.reduce_any(legal, axis=-1, keepdims=True)))
            logits = tf.where(legal, 0.0, -1e9)
            draw = tf.random.stateless_categorical(logits, 1, seeding.seed(), dtype=tf.int32)[:, 0]
            return low + tf.cast(draw, s.dtype)
        if s.dtype.is_integer:
            offset = tf.random.stateless_uniform(shape, seeding.seed(), 0, tf.int32.max, tf.int32)
            offset = offset % tf.cast(high - low + 1, tf.int32)
            return low + tf.cast(offset, s.dtype)
        return tf.random.stateless_uniform(shape, seeding.seed(), dtype=s.dtype) * (high - low) + low

    return tf.nest.map_structure(sample, spec)


def clip_to_spec(action: Nest, spec: Nest) -> Nest:
    """Clip float actions into their bounds (the stored action stays unclipped)."""

    def clip(a, s):
        if a.dtype.is_floating and hasattr(s, "minimum"):
            return tf.clip_by_value(a, s.minimum, s.maximum)
        return a

    return tf.nest.map_structure(clip, action, spec)


def observe(chain: TransformerChain, algorithm: Algorithm, raw: TimeStep, transformer_state: tuple,
            policy_state: Nest, batch: Any) -> tuple[TimeStep, tuple, Nest]:
    """The env-side half of a step: transform the raw step, reset the policy state at FIRST.

    Returns ``(time_step, transformer_state, state)``; transformer statistics
    update here, on collected data only.
    """
    time_step, transformer_state = chain.transform(raw, transformer_state, update=True)
    state = reset_where_first(time_step.step_type, policy_state, algorithm.initial_state(batch))
    return time_step, transformer_state, state


def act(algorithm: Algorithm, converters: Converters, specs: RunSpecs, random_actions: Any,
        time_step: TimeStep, state: Nest, batch: Any) -> tuple:
    """The policy half of a step: ``(action, next_state, info as parameters)``.

    While ``random_actions`` is true (off-policy initial collection) the
    action is uniformly random; the rollout still runs, so the info keeps its spec.
    """
    step: PolicyStep = algorithm.rollout(time_step, state)
    action = step.action
    if algorithm.off_policy and algorithm.initial_collect_steps:  # only they collect at random
        mask = action_mask_of(time_step.observation)
        action = tf.cond(random_actions, lambda: uniform_action(specs.action, batch, mask), lambda: action)
    return action, step.state, converters.to_params(step.info)


def greedy(chain: TransformerChain, algorithm: Algorithm, raw: TimeStep, transformer_state: tuple,
           policy_state: Nest, batch: Any) -> tuple:
    """The greedy step: ``(clipped action, transformer_state, next policy state)``.

    Transformers apply without updating their statistics; evaluation and
    exported policies both take this step.
    """
    time_step, transformer_state = chain.transform(raw, transformer_state)
    state = reset_where_first(time_step.step_type, policy_state, algorithm.initial_state(batch))
    step = algorithm.predict(time_step, state)
    return clip_to_spec(step.action, algorithm.action_spec), transformer_state, step.state
