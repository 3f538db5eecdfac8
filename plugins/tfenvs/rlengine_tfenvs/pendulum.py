"""``tf/Pendulum-v1``: Gymnasium's ``PendulumEnv`` (swing up and hold, cost on angle, speed and torque).

The arithmetic follows ``gymnasium/envs/classic_control/pendulum.py`` in float64, as its ``state``
computes, with the torque terms in float32 as numpy computes them from the float32 action.
"""

from __future__ import annotations

import math

import numpy as np
import tensorflow as tf

from rlengine_tfenvs.base import PhysicsEnvironment, round_to_float32

__all__ = ["Pendulum"]

MAX_SPEED = 8.0
MAX_TORQUE = 2.0
DT = 0.05
G = 10.0
M = 1.0
L = 1.0


def angle_normalize(x: tf.Tensor) -> tf.Tensor:
    """``x`` in ``[-pi, pi)``, with Python's floored modulo as numpy's ``%``."""
    return tf.math.floormod(x + math.pi, 2 * math.pi) - math.pi


class Pendulum(PhysicsEnvironment):
    """Swing a pendulum up and keep it upright with a torque in [-2, 2]; never terminates, 200 steps."""

    twin_of = "Pendulum-v1"
    max_episode_steps = 200
    state_size = 2  # theta, theta_dot
    num_uniforms = 2
    observation_high = np.array([1.0, 1.0, MAX_SPEED], dtype=np.float32)
    observation_low = -observation_high
    action_low = np.array([-MAX_TORQUE], dtype=np.float32)
    action_high = np.array([MAX_TORQUE], dtype=np.float32)

    def initial_physics(self, uniform: tf.Tensor) -> tf.Tensor:
        high = tf.constant([math.pi, 1.0], tf.float64)  # numpy's uniform(low=-high, high=high)
        return -high + (high - -high) * uniform

    def physics_step(self, physics: tf.Tensor, action: tf.Tensor, first: tf.Tensor) -> tuple:
        th, thdot = tf.unstack(physics, axis=1)
        u = tf.cast(tf.clip_by_value(action[:, 0], -MAX_TORQUE, MAX_TORQUE), tf.float64)  # float32 values
        torque_cost = round_to_float32(float(np.float32(0.001)) * round_to_float32(tf.square(u)))  # float32 in numpy
        costs = tf.square(angle_normalize(th)) + 0.1 * tf.square(thdot) + torque_cost
        newthdot = thdot + (3 * G / (2 * L) * tf.sin(th) + round_to_float32(3.0 / (M * L**2) * u)) * DT
        newthdot = tf.clip_by_value(newthdot, -MAX_SPEED, MAX_SPEED)
        newth = th + newthdot * DT
        return tf.stack([newth, newthdot], axis=1), -costs, tf.zeros_like(th, tf.bool)

    def observe(self, physics: tf.Tensor) -> tf.Tensor:
        th, thdot = tf.unstack(physics, axis=1)
        return tf.cast(tf.stack([tf.cos(th), tf.sin(th), thdot], axis=1), tf.float32)
