"""The nests that flow between environments, algorithms, pipelines and learners.

Every field is a tensor (or a nest of tensors) with leading batch dimensions;
the specs of all of them are derived once, in :mod:`rlengine.run.specs`.

Convention (one transition per row): ``reward[t]`` and ``discount[t]`` belong
to arriving at ``observation[t]``; ``action[t]`` is taken at ``observation[t]``.
After a ``LAST`` step the environment starts a new episode, so the next row is
``FIRST`` and the action taken at ``LAST`` is ignored.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import tensorflow as tf

Nest = Any  # a tensor, array, or a dict / tuple / list / namedtuple of them


def zeros_from_spec(spec: Nest, outer_shape: list) -> Nest:
    """Zeros of every spec in ``spec`` with ``outer_shape`` in front (e.g. ``[batch]``)."""
    return tf.nest.map_structure(lambda s: tf.zeros(list(outer_shape) + list(s.shape), s.dtype), spec)


class StepType:
    """Where a time step stands in its episode (int32 values)."""

    FIRST = 0
    MID = 1
    LAST = 2


class TimeStep(NamedTuple):
    """What an environment returns for each of its batched copies."""

    step_type: Nest  # int32 [B]: StepType
    reward: Nest  # float32 [B]: reward received on arriving here
    discount: Nest  # float32 [B]: 0 when terminated, 1 otherwise (truncation keeps 1)
    observation: Nest  # nest of [B, ...]
    prev_action: Nest  # nest of [B, ...]: action that led here (zeros on FIRST)
    env_id: Nest  # int32 [B]: unique id of the environment copy in the run

    @classmethod
    def spec_of(cls, observation_spec: Nest, action_spec: Nest) -> "TimeStep":
        """The spec of one copy's time step: int32 step type and env id, float32 reward and discount, and
        the given observation and action specs (what every environment's ``time_step_spec()`` returns)."""
        return cls(step_type=tf.TensorSpec((), tf.int32), reward=tf.TensorSpec((), tf.float32),
                   discount=tf.TensorSpec((), tf.float32), observation=observation_spec,
                   prev_action=action_spec, env_id=tf.TensorSpec((), tf.int32))


class PolicyStep(NamedTuple):
    """What ``predict`` / ``rollout`` / ``train_step`` return."""

    action: Nest  # nest of actions (or action distributions for train_step)
    state: Nest  # the algorithm's next policy state (``()`` when stateless)
    info: Nest  # anything the algorithm wants back later (may hold distributions)


class Experience(NamedTuple):
    """One collected row: the time step, the action taken and the rollout info.

    ``rollout_info`` holds action distributions as parameter nests (see
    :mod:`rlengine.collect.converters`), so experience fits in tensor arrays, queues
    and replay buffers. ``state`` is the policy state the action was computed
    from (``()`` when the algorithm is stateless).
    """

    step_type: Nest
    reward: Nest
    discount: Nest
    observation: Nest
    prev_action: Nest
    env_id: Nest
    action: Nest
    rollout_info: Nest
    state: Nest

    @property
    def time_step(self) -> TimeStep:
        return TimeStep(*self[:6])

    @classmethod
    def from_steps(cls, time_step: TimeStep, policy_step: PolicyStep, state: Nest) -> "Experience":
        return cls(*time_step, policy_step.action, policy_step.info, state)


class LossInfo(NamedTuple):
    """What ``train_complete`` reports: the scalar loss, its named terms and diagnostics.

    ``extra`` holds the terms the loss is made of (summarised as
    ``loss/<name>``); ``diagnostics`` holds scalars that watch training
    without being optimised, such as explained variance, value or Q
    estimates, entropy, a temperature or a learning rate (summarised as
    ``diagnostics/<name>``). Both are averaged over an iteration's updates.
    """

    loss: Any  # scalar tensor that was differentiated
    extra: dict  # name -> scalar tensor: the loss terms
    priority: Any = ()  # [B] new priorities of the sampled sequences (prioritized replay only)
    diagnostics: dict = {}  # name -> scalar tensor; the default is shared, so the core never mutates it
