"""``tf/Acrobot-v1``: Gymnasium's ``AcrobotEnv`` (the "book" dynamics, RK4 over 0.2 s) in TensorFlow.

The arithmetic follows ``gymnasium/envs/classic_control/acrobot.py`` term by term and in the same
order, in float64 as its ``rk4`` computes. The initial state is drawn in float64 and rounded to
float32, as Gymnasium's ``reset`` does (``.astype(np.float32)``).
"""

from __future__ import annotations

import math

import numpy as np
import tensorflow as tf

from rlengine_tfenvs.base import PhysicsEnvironment, round_to_float32

__all__ = ["Acrobot"]

DT = 0.2
LINK_LENGTH_1 = 1.0
LINK_MASS_1 = 1.0
LINK_MASS_2 = 1.0
LINK_COM_POS_1 = 0.5
LINK_COM_POS_2 = 0.5
LINK_MOI = 1.0
MAX_VEL_1 = 4 * math.pi
MAX_VEL_2 = 9 * math.pi
GRAVITY = 9.8
PI = math.pi


def _dsdt(theta1, theta2, dtheta1, dtheta2, a):
    """Time derivatives of the four state variables under torque ``a`` (Gymnasium's ``_dsdt``, "book")."""
    m1, m2, l1, lc1, lc2, i1, i2, g = (LINK_MASS_1, LINK_MASS_2, LINK_LENGTH_1, LINK_COM_POS_1, LINK_COM_POS_2,
                                       LINK_MOI, LINK_MOI, GRAVITY)
    d1 = m1 * lc1**2 + m2 * (l1**2 + lc2**2 + 2 * l1 * lc2 * tf.cos(theta2)) + i1 + i2
    d2 = m2 * (lc2**2 + l1 * lc2 * tf.cos(theta2)) + i2
    phi2 = m2 * lc2 * g * tf.cos(theta1 + theta2 - PI / 2.0)
    phi1 = (-m2 * l1 * lc2 * tf.square(dtheta2) * tf.sin(theta2)
            - 2 * m2 * l1 * lc2 * dtheta2 * dtheta1 * tf.sin(theta2)
            + (m1 * lc1 + m2 * l1) * g * tf.cos(theta1 - PI / 2) + phi2)
    ddtheta2 = (a + d2 / d1 * phi1 - m2 * l1 * lc2 * tf.square(dtheta1) * tf.sin(theta2) - phi2) / (
        m2 * lc2**2 + i2 - tf.square(d2) / d1)
    ddtheta1 = -(d2 * ddtheta2 + phi1) / d1
    return dtheta1, dtheta2, ddtheta1, ddtheta2


def _rk4(s, a):
    """One fourth-order Runge-Kutta step of ``DT`` (Gymnasium's ``rk4`` over ``[0, dt]``)."""
    dt2 = DT / 2.0
    k1 = _dsdt(*s, a)
    k2 = _dsdt(*[y + dt2 * k for y, k in zip(s, k1)], a)
    k3 = _dsdt(*[y + dt2 * k for y, k in zip(s, k2)], a)
    k4 = _dsdt(*[y + DT * k for y, k in zip(s, k3)], a)
    return [y + DT / 6.0 * (d1 + 2 * d2 + 2 * d3 + d4) for y, d1, d2, d3, d4 in zip(s, k1, k2, k3, k4)]


def _wrap(x, low, high):
    """Gymnasium's ``wrap``: add or subtract the period until ``x`` is in ``[low, high]``."""
    period = high - low
    above = tf.math.ceil((x - high) / period)  # how many subtractions its while-loop makes
    below = tf.math.ceil((low - x) / period)
    return tf.where(x > high, x - above * period, tf.where(x < low, x + below * period, x))


class Acrobot(PhysicsEnvironment):
    """Swing the tip of a two-link chain above a line with torques -1, 0, +1 on the joint; -1 per step."""

    twin_of = "Acrobot-v1"
    max_episode_steps = 500
    state_size = 4  # theta1, theta2, dtheta1, dtheta2
    num_uniforms = 4
    observation_high = np.array([1.0, 1.0, 1.0, 1.0, MAX_VEL_1, MAX_VEL_2], dtype=np.float32)
    observation_low = -observation_high
    num_actions = 3

    def initial_physics(self, uniform: tf.Tensor) -> tf.Tensor:
        return round_to_float32(-0.1 + (0.1 - -0.1) * uniform)

    def physics_step(self, physics: tf.Tensor, action: tf.Tensor, first: tf.Tensor) -> tuple:
        torque = tf.clip_by_value(tf.cast(action, tf.float64) - 1.0, -1.0, 1.0)  # AVAIL_TORQUE[action]
        theta1, theta2, dtheta1, dtheta2 = _rk4(tf.unstack(physics, axis=1), torque)
        theta1 = _wrap(theta1, -PI, PI)
        theta2 = _wrap(theta2, -PI, PI)
        dtheta1 = tf.clip_by_value(dtheta1, -MAX_VEL_1, MAX_VEL_1)
        dtheta2 = tf.clip_by_value(dtheta2, -MAX_VEL_2, MAX_VEL_2)
        terminated = -tf.cos(theta1) - tf.cos(theta2 + theta1) > 1.0
        reward = tf.where(terminated, tf.constant(0.0, tf.float64), -1.0)
        return tf.stack([theta1, theta2, dtheta1, dtheta2], axis=1), reward, terminated

    def observe(self, physics: tf.Tensor) -> tf.Tensor:
        theta1, theta2, dtheta1, dtheta2 = tf.unstack(physics, axis=1)
        return tf.cast(tf.stack([tf.cos(theta1), tf.sin(theta1), tf.cos(theta2), tf.sin(theta2), dtheta1, dtheta2],
                                axis=1), tf.float32)
