"""Exploration noise that is held across steps, carried in each copy's policy state.

Uncorrelated Gaussian noise undoes itself from one step to the next, so on a
sparse-reward task such as MountainCarContinuous-v0 the car never travels far
enough to find the reward. Two remedies, both restarted with each episode
(the core zeroes the policy state of a copy whose episode starts):

- :class:`StateDependentNoise` (``sac.use_sde``): generalized state-dependent
  exploration, gSDE (Raffin, Kober and Stulp, 2022). The noise is a linear map
  of the actor's last hidden features, ``eps = phi(s) @ (sigma * W)``, with
  ``sigma`` a learned ``[features, actions]`` matrix and ``W`` standard normal,
  drawn per copy at the start of each episode (and every ``sample_interval``
  steps if set) and held in between: the same state gets the same push, and
  the push changes smoothly with the state. For learning, the action given the
  state is ``Normal(mu, sqrt(phi^2 @ sigma^2))`` squashed by tanh.
- :class:`OrnsteinUhlenbeckNoise` (``td3.exploration_noise_type``): a
  mean-reverting random walk per copy and action dimension, as the RL Zoo's
  TD3 on MountainCarContinuous uses.

Replay does not keep this state (the core stores a policy state only for an
algorithm with ``use_rollout_state``): training needs none of it.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import tensorflow as tf

import rlengine

HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def tanh_log_prob(u, normal_log_prob):
    """Log-probability of ``tanh(u)`` from that of ``u`` (per action dimension, summed over the last axis).

    ``log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u))`` stays finite where ``tanh(u)`` rounds to +-1.
    """
    return tf.reduce_sum(normal_log_prob - 2.0 * (math.log(2.0) - u - tf.nn.softplus(-2.0 * u)), axis=-1)


class SDEState(NamedTuple):
    weights: tf.Tensor  # [B, features, actions] standard normal, zeros until drawn
    steps: tf.Tensor  # int32 [B]: steps since the weights were drawn; 0 after a reset: draw now


class StateDependentNoise(tf.Module):
    """gSDE for a tanh-squashed Gaussian actor: its learned ``log_std`` matrix and the sampling both ways."""

    #: SB3's gSDE clips the actor's mean to this before the tanh, so the noise keeps a say near the bounds
    MEAN_CLIP = 2.0

    def __init__(self, num_features: int, num_actions: int, log_std_init: float, sample_interval: int):
        super().__init__(name="sde")
        self.num_features, self.num_actions = num_features, num_actions
        self.sample_interval = sample_interval  # 0: one draw per episode
        with self.name_scope:
            self.log_std = tf.Variable(tf.fill([num_features, num_actions], float(log_std_init)), name="log_std")

    @property
    def state_spec(self) -> SDEState:
        return SDEState(tf.TensorSpec([self.num_features, self.num_actions], tf.float32),
                        tf.TensorSpec([], tf.int32))

    def _variance(self, features):
        """``[B, actions]``: the variance of ``phi @ (sigma * W)``; the features carry no gradient here."""
        return tf.matmul(tf.square(tf.stop_gradient(features)), tf.exp(2.0 * self.log_std))

    def greedy(self, loc):
        """The greedy action in [-1, 1]: the clipped mean, squashed."""
        return tf.tanh(tf.clip_by_value(loc, -self.MEAN_CLIP, self.MEAN_CLIP))

    def explore(self, loc, features, state: SDEState):
        """The rollout's ``(action in [-1, 1], next state)``: the held weights, drawn anew where due."""
        due = tf.equal(state.steps, 0)
        if self.sample_interval:
            due = tf.logical_or(due, tf.equal(state.steps % self.sample_interval, 0))
        drawn = tf.random.stateless_normal(tf.shape(state.weights), rlengine.random.seed())
        weights = tf.where(due[:, None, None], drawn, state.weights)
        noise = tf.einsum("bf,bfa->ba", features, weights * tf.exp(self.log_std)[None])
        loc = tf.clip_by_value(loc, -self.MEAN_CLIP, self.MEAN_CLIP)
        return tf.tanh(loc + noise), SDEState(weights, state.steps + 1)

    def sample(self, loc, features):
        """A reparameterised sample of the state's action distribution, in [-1, 1], and its log-probability.

        As SB3 does, the rows of one call share one draw of the weights ``W``: the noise of each row is
        ``phi @ (sigma * W)``, as in a rollout. With independent noise per row (the same distribution row
        by row) two of three sac/MountainCarContinuous-v0 seeds lost the flag after finding it; with one
        draw per call three of three kept it (docs/results.md).
        """
        loc = tf.clip_by_value(loc, -self.MEAN_CLIP, self.MEAN_CLIP)
        std = tf.sqrt(self._variance(features) + 1e-6)
        weights = tf.random.stateless_normal(tf.shape(self.log_std), rlengine.random.seed())
        noise = tf.matmul(tf.stop_gradient(features), tf.exp(self.log_std) * weights)
        u = loc + noise
        z = noise / std
        return tf.tanh(u), tanh_log_prob(u, -0.5 * tf.square(z) - tf.math.log(std) - HALF_LOG_2PI)


class OrnsteinUhlenbeckNoise:
    """``x += theta (0 - x) dt + sigma sqrt(dt) N(0, 1)`` per copy and action dimension; the state is ``x``.

    ``theta = 0.15`` and ``dt = 0.01`` are Stable-Baselines3's defaults, so ``sigma`` means what the RL Zoo's
    ``noise_std`` does. From 0 at an episode's start it spreads like a random walk (``sigma sqrt(dt t)`` after
    ``t`` steps) towards a standard deviation of ``sigma sqrt(dt / (2 theta dt - (theta dt)^2))``, about
    ``1.83 sigma``, changing little from one step to the next.
    """

    THETA, DT = 0.15, 1e-2

    def __init__(self, num_actions: int, sigma: float):
        self.num_actions, self.sigma = num_actions, sigma

    @property
    def state_spec(self) -> tf.TensorSpec:
        return tf.TensorSpec([self.num_actions], tf.float32)

    def step(self, state):
        """The next noise (also the next state)."""
        shock = tf.random.stateless_normal(tf.shape(state), rlengine.random.seed())
        return state - self.THETA * self.DT * state + self.sigma * math.sqrt(self.DT) * shock
