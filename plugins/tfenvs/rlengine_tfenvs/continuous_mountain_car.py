"""``tf/MountainCarContinuous-v0``: Gymnasium's ``Continuous_MountainCarEnv`` in TensorFlow.

Gymnasium keeps this env's state as a float32 array after every step but draws it in float64 at
``reset``, so the first step of an episode computes in float64 and the others in float32, with
numpy's rules for mixing float32 scalars and Python floats (the Python float is rounded to
float32 first). This module reproduces that rounding in float64 arithmetic: a float32 sum or
product of two float32 values equals the float64 one rounded to float32. The reward is computed in
float64 from the action as given, outside ``[-1, 1]`` too; the force uses the clipped action.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from rlengine_tfenvs.base import round_to_float32
from rlengine_tfenvs.mountain_car import MAX_POSITION, MAX_SPEED, MIN_POSITION, Hills

__all__ = ["MountainCarContinuous"]

MIN_ACTION = -1.0
MAX_ACTION = 1.0
GOAL_POSITION = 0.45
GOAL_VELOCITY = 0.0
POWER = 0.0015


def _f32(value: float) -> float:
    """A Python float as numpy rounds it when it meets a float32 scalar."""
    return float(np.float32(value))


class MountainCarContinuous(Hills):
    """Drive the car up the right hill with a force in [-1, 1]; +100 at the goal, minus 0.1 force² per step."""

    twin_of = "MountainCarContinuous-v0"
    max_episode_steps = 999
    action_low = np.array([MIN_ACTION], dtype=np.float32)
    action_high = np.array([MAX_ACTION], dtype=np.float32)

    def physics_step(self, physics: tf.Tensor, action: tf.Tensor, first: tf.Tensor) -> tuple:
        position, velocity = tf.unstack(physics, axis=1)  # float64 at the first step, float32 values after
        rounded = lambda x: tf.where(first, x, round_to_float32(x))  # noqa: E731  (float32 after the first step)
        a = tf.cast(action[:, 0], tf.float64)
        inside = (a >= MIN_ACTION) & (a <= MAX_ACTION)  # min(max(a, -1.0), 1.0) keeps the float32 scalar
        slope = 0.0025 * tf.cos(rounded(3 * position))  # math.cos of a float32 product: a Python float
        # force * power - slope: float32 arithmetic when force is the float32 action, Python floats when clipped
        pushed = round_to_float32(round_to_float32(a * _f32(POWER)) - round_to_float32(slope))
        clipped = tf.clip_by_value(a, MIN_ACTION, MAX_ACTION) * POWER - slope
        increment = tf.where(inside, pushed, rounded(clipped))
        velocity = rounded(velocity + increment)
        velocity = tf.where(first, tf.clip_by_value(velocity, -MAX_SPEED, MAX_SPEED),
                            tf.clip_by_value(velocity, -_f32(MAX_SPEED), _f32(MAX_SPEED)))
        position = rounded(position + velocity)
        position = tf.where(first, tf.clip_by_value(position, MIN_POSITION, MAX_POSITION),
                            tf.clip_by_value(position, _f32(MIN_POSITION), _f32(MAX_POSITION)))
        at_wall = tf.where(first, position == MIN_POSITION, position == _f32(MIN_POSITION))
        velocity = tf.where(at_wall & (velocity < 0), tf.zeros_like(velocity), velocity)
        goal = tf.where(first, tf.constant(GOAL_POSITION, tf.float64), _f32(GOAL_POSITION))
        terminated = (position >= goal) & (velocity >= GOAL_VELOCITY)
        reward = tf.where(terminated, tf.constant(100.0, tf.float64), 0.0) - tf.square(a) * 0.1
        return round_to_float32(tf.stack([position, velocity], axis=1)), reward, terminated

    def observe(self, physics: tf.Tensor) -> tf.Tensor:
        return tf.cast(physics, tf.float32)
