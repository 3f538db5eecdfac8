"""``tf/CartPole-v1``: Gymnasium's ``CartPoleEnv`` (Euler integration, reward 1 per step) in TensorFlow.

The arithmetic follows ``gymnasium/envs/classic_control/cartpole.py`` operation by operation, in
float64 like its ``state`` array, so the pole's unstable dynamics do not amplify a float32
rounding into a different termination step.
"""

from __future__ import annotations

import math

import numpy as np
import tensorflow as tf

from rlengine_tfenvs.base import PhysicsEnvironment

__all__ = ["CartPole"]

GRAVITY = 9.8
MASSCART = 1.0
MASSPOLE = 0.1
TOTAL_MASS = MASSPOLE + MASSCART
LENGTH = 0.5  # half the pole's length
POLEMASS_LENGTH = MASSPOLE * LENGTH
FORCE_MAG = 10.0
TAU = 0.02  # seconds between state updates
THETA_THRESHOLD = 12 * 2 * math.pi / 360
X_THRESHOLD = 2.4


class CartPole(PhysicsEnvironment):
    """Push a cart left (0) or right (1) to keep its pole upright; +1 per step, 500 steps at most."""

    twin_of = "CartPole-v1"
    max_episode_steps = 500
    state_size = 4  # x, x_dot, theta, theta_dot
    num_uniforms = 4
    observation_high = np.array([X_THRESHOLD * 2, np.inf, THETA_THRESHOLD * 2, np.inf], dtype=np.float32)
    observation_low = -observation_high
    num_actions = 2

    def initial_physics(self, uniform: tf.Tensor) -> tf.Tensor:
        return -0.05 + (0.05 - -0.05) * uniform  # numpy's uniform(-0.05, 0.05, size=4): low + (high - low) * u

    def physics_step(self, physics: tf.Tensor, action: tf.Tensor, first: tf.Tensor) -> tuple:
        x, x_dot, theta, theta_dot = tf.unstack(physics, axis=1)
        force = tf.where(tf.equal(action, 1), tf.constant(FORCE_MAG, tf.float64), -FORCE_MAG)
        costheta = tf.cos(theta)
        sintheta = tf.sin(theta)
        temp = (force + POLEMASS_LENGTH * tf.square(theta_dot) * sintheta) / TOTAL_MASS
        thetaacc = (GRAVITY * sintheta - costheta * temp) / (
            LENGTH * (4.0 / 3.0 - MASSPOLE * tf.square(costheta) / TOTAL_MASS))
        xacc = temp - POLEMASS_LENGTH * thetaacc * costheta / TOTAL_MASS
        x = x + TAU * x_dot  # "euler": positions move with the old velocities
        x_dot = x_dot + TAU * xacc
        theta = theta + TAU * theta_dot
        theta_dot = theta_dot + TAU * thetaacc
        terminated = (x < -X_THRESHOLD) | (x > X_THRESHOLD) | (theta < -THETA_THRESHOLD) | (theta > THETA_THRESHOLD)
        reward = tf.ones_like(x)  # also on the terminating step
        return tf.stack([x, x_dot, theta, theta_dot], axis=1), reward, terminated

    def observe(self, physics: tf.Tensor) -> tf.Tensor:
        return tf.cast(physics, tf.float32)
