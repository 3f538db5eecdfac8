"""``PhysicsEnvironment``: what every first-party graph environment shares, written once.

An environment module brings only its physics (:meth:`initial_physics`, :meth:`physics_step`,
:meth:`observe`) and its constants; this base adds the batch, the per-copy random keys, the time
limit, the autoreset, ``env_id`` and ``prev_action``, and the specs, following the contract of
:class:`rlengine.GraphEnvironment`.

The state is a dict of batched tensors (``B = num_envs``; ``state_spec`` gives one copy's)::

    {"physics": float64 [B, n],   # the Gymnasium env's ``state`` vector, in its order
     "key":     int32 [B, 2],     # each copy's Threefry key (rlengine_tfenvs.random)
     "elapsed": int32 [B],        # steps taken in the current episode (the time limit counts them)
     "done":    bool [B]}         # the last step was LAST: the next one starts a new episode

The physics is float64, as Gymnasium's classic-control envs compute (their ``state`` arrays are
float64), so observations agree with Gymnasium's to float32 rounding and terminations decided on
a threshold agree exactly; only the observations are cast to float32.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import tensorflow as tf

from rlengine import BoundedTensorSpec, GraphEnvironment, StepType, TimeStep
from rlengine_tfenvs.random import copy_keys, split_and_uniform

__all__ = ["PhysicsEnvironment", "round_to_float32"]


def round_to_float32(x: tf.Tensor) -> tf.Tensor:
    """``x`` (float64) rounded to the nearest float32, kept as float64: numpy's float32 arithmetic."""
    return tf.cast(tf.cast(x, tf.float32), tf.float64)


def _rows(mask: tf.Tensor, like: tf.Tensor) -> tf.Tensor:
    """``mask [B]`` reshaped to broadcast over ``like [B, ...]`` in ``tf.where``."""
    return tf.reshape(mask, [-1] + [1] * (like.shape.rank - 1))


class PhysicsEnvironment(GraphEnvironment):
    """A batch of copies of one classic-control task; subclasses set the constants and the physics."""

    #: The Gymnasium id this environment reproduces (``"CartPole-v1"``); its presets serve this one too.
    twin_of: ClassVar[str]
    #: Gymnasium's registered ``max_episode_steps``: the step that reaches it is truncated.
    max_episode_steps: ClassVar[int]
    #: Length of the physics vector, and how many uniform draws an initial state takes.
    state_size: ClassVar[int]
    num_uniforms: ClassVar[int]
    #: Gymnasium's observation Box bounds (float32), for the Gymnasium adapter.
    observation_low: ClassVar[np.ndarray]
    observation_high: ClassVar[np.ndarray]
    #: Discrete actions: their number. Continuous actions: ``None``, and the Box bounds below.
    num_actions: ClassVar[int | None] = None
    action_low: ClassVar[np.ndarray | None] = None
    action_high: ClassVar[np.ndarray | None] = None

    def __init__(self, env_id: str, num_envs: int, seed: int = 0, first_env_id: int = 0, config: Any = None):
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"{env_id!r}: num_envs must be a positive integer, got {num_envs!r}")
        super().__init__(env_id, int(num_envs), seed, int(first_env_id), config)
        if self.num_actions is not None:  # as rlengine_gym maps Discrete(n)
            self._action_spec = BoundedTensorSpec((), tf.int32, 0, self.num_actions - 1)
        else:  # as rlengine_gym maps a float32 Box
            self._action_spec = BoundedTensorSpec(self.action_low.shape, tf.float32, self.action_low,
                                                  self.action_high)
        self._time_step_spec = TimeStep.spec_of(tf.TensorSpec(self.observation_low.shape, tf.float32),
                                                self._action_spec)
        self._state_spec = {"physics": tf.TensorSpec((self.state_size,), tf.float64),  # one copy's
                            "key": tf.TensorSpec((2,), tf.int32), "elapsed": tf.TensorSpec((), tf.int32),
                            "done": tf.TensorSpec((), tf.bool)}

    # -- what a subclass writes --------------------------------------------------------------
    def initial_physics(self, uniform: tf.Tensor) -> tf.Tensor:
        """``float64 [B, state_size]``: initial states from ``uniform``, ``float64 [B, num_uniforms]`` in [0, 1)."""
        raise NotImplementedError

    def physics_step(self, physics: tf.Tensor, action: tf.Tensor, first: tf.Tensor) -> tuple:
        """``(physics, reward float64 [B], terminated bool [B])`` after ``action`` (spec dtype, ``[B, ...]``).

        ``first`` (bool [B]) marks copies taking their episode's first step, for the one env whose
        arithmetic differs there (MountainCarContinuous).
        """
        raise NotImplementedError

    def observe(self, physics: tf.Tensor) -> tf.Tensor:
        """``float32 [B, ...]``: the observation Gymnasium returns for ``physics``."""
        raise NotImplementedError

    # -- GraphEnvironment ------------------------------------------------------------------------
    def time_step_spec(self) -> TimeStep:
        return self._time_step_spec

    def action_spec(self) -> Any:
        return self._action_spec

    def state_spec(self) -> dict:
        return self._state_spec

    def env_ids(self) -> tf.Tensor:
        return tf.range(self.first_env_id, self.first_env_id + self.num_envs, dtype=tf.int32)

    def reset(self, seed: Any) -> tuple:
        keys, physics = self._draw_initial(copy_keys(tf.convert_to_tensor(seed), self.env_ids()))
        b = self.num_envs
        state = {"physics": physics, "key": keys, "elapsed": tf.zeros([b], tf.int32), "done": tf.zeros([b], tf.bool)}
        return state, self._first_time_step(physics)

    def step(self, state: dict, action: Any) -> tuple:
        action = tf.cast(action, self._action_spec.dtype)
        restart = state["done"]  # these copies ignore the action and begin a new episode
        next_keys, fresh = tf.cond(tf.reduce_any(restart), lambda: self._draw_initial(state["key"]),
                                   lambda: (state["key"], state["physics"]))  # most steps restart no copy
        # Every copy steps its physics (a discarded result costs less than gathering the others).
        moved, reward, terminated = self.physics_step(state["physics"], action, tf.equal(state["elapsed"], 0))
        elapsed = state["elapsed"] + 1
        truncated = elapsed >= self.max_episode_steps  # Gymnasium's TimeLimit: the 500th step of CartPole-v1
        done = tf.logical_or(terminated, truncated)

        physics = tf.where(restart[:, tf.newaxis], fresh, moved)
        zero_action = tf.zeros_like(action)
        time_step = TimeStep(
            step_type=tf.where(restart, StepType.FIRST, tf.where(done, StepType.LAST, StepType.MID)),
            reward=tf.where(restart, 0.0, tf.cast(reward, tf.float32)),
            discount=tf.where(tf.logical_and(terminated, tf.logical_not(restart)), 0.0, 1.0),
            observation=self.observe(physics),
            prev_action=tf.where(_rows(restart, action), zero_action, action),
            env_id=self.env_ids())
        new_state = {"physics": physics,
                     "key": tf.where(restart[:, tf.newaxis], next_keys, state["key"]),  # one key per episode
                     "elapsed": tf.where(restart, 0, elapsed),
                     "done": tf.logical_and(done, tf.logical_not(restart))}
        return new_state, time_step

    def _draw_initial(self, keys: tf.Tensor) -> tuple:
        """``(next_keys, physics)``: every copy's next key and a new initial state drawn with its key."""
        next_keys, uniform = split_and_uniform(keys, self.num_uniforms)
        return next_keys, self.initial_physics(uniform)

    def _first_time_step(self, physics: tf.Tensor) -> TimeStep:
        b = self.num_envs
        return TimeStep(step_type=tf.fill([b], StepType.FIRST), reward=tf.zeros([b], tf.float32),
                        discount=tf.ones([b], tf.float32), observation=self.observe(physics),
                        prev_action=tf.zeros([b, *self._action_spec.shape], self._action_spec.dtype),
                        env_id=self.env_ids())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.env_id!r}, num_envs={self.num_envs}, first_env_id={self.first_env_id})"
