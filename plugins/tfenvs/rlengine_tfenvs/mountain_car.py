"""``tf/MountainCar-v0``: Gymnasium's ``MountainCarEnv`` (discrete pushes, -1 per step) in TensorFlow.

The arithmetic follows ``gymnasium/envs/classic_control/mountain_car.py`` in float64, as its
``state`` (a float64 array, then float64 scalars) computes.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from rlengine_tfenvs.base import PhysicsEnvironment

__all__ = ["MountainCar"]

MIN_POSITION = -1.2
MAX_POSITION = 0.6
MAX_SPEED = 0.07
GOAL_POSITION = 0.5
GOAL_VELOCITY = 0.0
FORCE = 0.001
GRAVITY = 0.0025


class Hills(PhysicsEnvironment):
    """What both mountain cars share: the state, its bounds, and the start at rest in the valley."""

    state_size = 2  # position, velocity
    num_uniforms = 1
    observation_low = np.array([MIN_POSITION, -MAX_SPEED], dtype=np.float32)
    observation_high = np.array([MAX_POSITION, MAX_SPEED], dtype=np.float32)

    def initial_physics(self, uniform: tf.Tensor) -> tf.Tensor:
        position = -0.6 + (-0.4 - -0.6) * uniform[:, 0]  # numpy's uniform(low=-0.6, high=-0.4)
        return tf.stack([position, tf.zeros_like(position)], axis=1)


class MountainCar(Hills):
    """Drive an underpowered car up the right hill: push left (0), none (1) or right (2); -1 per step."""

    twin_of = "MountainCar-v0"
    max_episode_steps = 200
    num_actions = 3

    def physics_step(self, physics: tf.Tensor, action: tf.Tensor, first: tf.Tensor) -> tuple:
        position, velocity = tf.unstack(physics, axis=1)
        push = tf.cast(tf.clip_by_value(action, 0, 2) - 1, tf.float64)
        velocity = velocity + (push * FORCE + tf.cos(3 * position) * -GRAVITY)
        velocity = tf.clip_by_value(velocity, -MAX_SPEED, MAX_SPEED)
        position = tf.clip_by_value(position + velocity, MIN_POSITION, MAX_POSITION)
        velocity = tf.where((position == MIN_POSITION) & (velocity < 0), tf.zeros_like(velocity), velocity)  # the wall
        terminated = (position >= GOAL_POSITION) & (velocity >= GOAL_VELOCITY)
        return tf.stack([position, velocity], axis=1), -tf.ones_like(position), terminated

    def observe(self, physics: tf.Tensor) -> tf.Tensor:
        return tf.cast(physics, tf.float32)
