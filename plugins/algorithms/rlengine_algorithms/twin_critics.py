"""What SAC and TD3 share: a bounded-Box actor and twin critics, each behind an encoder.

Actions are handled in ``[-1, 1]`` units (:class:`ActionScale`). Observations
go through the configured encoder: by default the actor and the (twin)
critics each have their own; with ``share_encoder`` one encoder is trained by
the critic loss only, and the actor sees its features through
``stop_gradient``. Target critics (and actors) have frozen copies of their
encoders, moved with them. The replay, the stacked critics and the target
updates are those of every off-policy algorithm (:mod:`rlengine_algorithms.critics`).
"""

from __future__ import annotations

import attrs
import numpy as np
import tensorflow as tf

from rlengine import ConfigError
from rlengine_algorithms.critics import OffPolicyAlgorithm, OffPolicyConfig, Transition, encode, to_transitions
from rlengine_algorithms.masking import refuse_mask


@attrs.define(kw_only=True)
class ActorCriticOffPolicyConfig(OffPolicyConfig):
    """The replay options plus the encoder sharing of an actor and twin critics (SAC, TD3)."""

    #: one encoder for actor and critics, trained by the critic loss only (the actor sees its features
    #: through stop_gradient); false: the actor and the critics each have their own
    share_encoder: bool = False


class ActionScale:
    """Maps a bounded Box action to the ``[-1, 1]`` units the networks use and back."""

    def __init__(self, spec, algorithm: str):
        low = np.broadcast_to(np.asarray(spec.minimum, np.float32), spec.shape).reshape(-1)
        high = np.broadcast_to(np.asarray(spec.maximum, np.float32), spec.shape).reshape(-1)
        if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
            raise ConfigError(f"algorithm {algorithm!r} needs finite Box action bounds, got {low} .. {high}")
        self.shape, self.size = spec.shape, int(low.size)
        self.center, self.half = (high + low) / 2, (high - low) / 2

    def to_env(self, unit):
        """``[B, size]`` in [-1, 1] -> actions of the spec's shape."""
        return tf.reshape(self.center + self.half * unit, [-1, *self.shape])

    def to_unit(self, action):
        return (tf.reshape(action, [-1, self.size]) - self.center) / self.half


def actor_and_critic_encoders(algorithm, config) -> tuple:
    """``(actor encoder, critic encoder)``: the same object when shared or without variables."""
    critic = algorithm.make_encoder(config.encoder, scope="critic_encoder")
    if config.share_encoder or not critic.variables:  # an encoder without variables is the same function
        return critic, critic
    return algorithm.make_encoder(config.encoder, scope="actor_encoder"), critic


class TwinCriticAlgorithm(OffPolicyAlgorithm):
    """Base of SAC and TD3: checks the action spec, builds the encoders and reads replayed batches.

    Sets ``scale`` (an :class:`ActionScale`), ``actor_encoder`` and
    ``critic_encoder`` (one object when shared, or when the encoder has no
    variables), ``shared_encoder`` and ``actor_stops_gradient``.
    """

    def __init__(self, time_step_spec, action_spec, config):
        super().__init__(time_step_spec, action_spec, config)
        name = self.algorithm_name
        if action_spec.dtype.is_integer:
            raise ConfigError(f"algorithm {name!r} supports Box (continuous) actions, not Discrete; use 'dqn'")
        refuse_mask(time_step_spec.observation, name)
        self.scale = ActionScale(action_spec, name)
        self.actor_encoder, self.critic_encoder = actor_and_critic_encoders(self, config)
        self.shared_encoder = self.actor_encoder is self.critic_encoder
        # A shared encoder is trained by the critic loss only: the actor sees its features through stop_gradient.
        self.actor_stops_gradient = self.shared_encoder and bool(self.critic_encoder.trainable_variables)

    def preprocess_experience(self, exp) -> Transition:
        return to_transitions(exp, self.config.gamma)

    def encoded(self, batch: Transition) -> tuple:
        """``(actor features, critic features, action in [-1, 1] units)`` of a replayed batch."""
        obs, critic_obs = encode(batch.observation, [self.actor_encoder, self.critic_encoder])
        if self.actor_stops_gradient:
            obs = tf.stop_gradient(obs)
        return obs, critic_obs, self.scale.to_unit(batch.action)
