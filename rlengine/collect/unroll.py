"""The one unroll loop every pipeline collects with.

An unroll returns ``unroll_length + 1`` rows ``[T + 1, B]``: rows overlap by
one, so the last row (already acted on; its action is what the next unroll
applies first) is the next unroll's row 0. The reward between two unrolls is
never lost, and the last row serves as the bootstrap for returns.

The loop itself does not know where actions come from: ``act`` is given the
raw time step and the carried states and returns the next :class:`Carry`
plus anything the caller threads through the loop (the synchronous
collector acts inline and threads nothing; an env thread of the async
pipeline asks an actor thread and threads the policy version)::

    experience, carry, extra = unroll(stepper, act, carry, extra, specs, unroll_length, batch)

The environment comes as its stepper (:mod:`rlengine.collect.stepper`): ``stepper.step(env_state,
action)`` returns ``(env_state, raw time step)``, where the state is ``()`` for a Python
environment and a nest of tensors for a graph environment; it travels in the carry. A plain
callable ``step_env(action) -> raw time step`` (API 1.5 and before) is still taken, for a Python
environment.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import tensorflow as tf

from rlengine.api.data import Experience, Nest
from rlengine.api.specs import RunSpecs
from rlengine.collect.policy_step import clip_to_spec


class Carry(NamedTuple):
    """What one unroll hands to the next."""

    experience: Experience  # the last row, already acted on
    transformer_state: tuple
    policy_state: Nest  # state after the last row's rollout
    env_state: Nest = ()  # a graph environment's state after the last row; () for a Python environment


def unroll(env: Any, act: Callable[..., tuple], carry: Carry, extra: Any,
           specs: RunSpecs, unroll_length: int, batch: int) -> tuple:
    """Step ``unroll_length`` times inside the calling graph.

    ``env`` is a stepper (or a callable ``action -> raw time step``); ``act(raw,
    transformer_state, policy_state)`` returns ``(carry, extra)``. Returns
    ``(experience [T + 1, B], carry, extra)`` with ``extra`` as the last
    step's ``act`` returned it.
    """
    flat_spec = tf.nest.flatten(specs.experience)
    arrays = [tf.TensorArray(s.dtype, size=unroll_length + 1, element_shape=[batch, *s.shape]) for s in flat_spec]
    arrays = [a.write(0, t) for a, t in zip(arrays, tf.nest.flatten(carry.experience))]

    step_env = env.step if hasattr(env, "calls_python") else lambda env_state, action: (env_state, env(action))

    def step(t, carry, extra, arrays):
        env_state, raw = step_env(carry.env_state, clip_to_spec(carry.experience.action, specs.action))
        carry, extra = act(raw, carry.transformer_state, carry.policy_state)
        carry = carry._replace(env_state=env_state)
        arrays = [a.write(t, x) for a, x in zip(arrays, tf.nest.flatten(carry.experience))]
        return t + 1, carry, extra, arrays

    _, carry, extra, arrays = tf.while_loop(lambda t, *_: t <= unroll_length, step,
                                            (tf.constant(1), carry, extra, arrays), parallel_iterations=1)
    experience = tf.nest.pack_sequence_as(specs.experience, [a.stack() for a in arrays])
    return experience, carry, extra
