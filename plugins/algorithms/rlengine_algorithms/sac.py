"""Soft actor-critic (SAC) for bounded Box actions.

A tanh-squashed Gaussian actor, twin critics with Polyak-averaged targets
and a learned entropy temperature ``alpha``. Every update computes the three
losses from one pass over the batch and takes one gradient per loss from the
same (persistent) tape; the two critics run as one batched network.

Networks work in ``[-1, 1]`` action units (``ActionScale``): log-probabilities
are of the rescaled action, so ``target_entropy = -action_dim`` means the
same for every action range. In those units the policy is exactly
``rlengine.SquashedNormal(loc, scale, -1, 1)``; sampling and the log
probability are written out here because the bijector chain costs several
times more ops per update.

Observations go through the configured encoder: by default the actor and the
(twin) critics each have their own; with ``share_encoder`` one encoder is
trained by the critic loss only. Target critics (and actors) have frozen
copies of their encoders, moved with them.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Optional

import attrs
import tensorflow as tf
import tf_keras

import rlengine
from rlengine import ConfigError, LossInfo, PolicyStep
from rlengine_algorithms.critics import (
    ActionScale,
    ActorCriticOffPolicyConfig,
    OffPolicyAlgorithm,
    StackedMLP,
    Transition,
    actor_and_critic_encoders,
    encode,
    target_encoder,
    to_transitions,
    trainable_of,
    variables_of,
    weighted_mean,
)
from rlengine_algorithms.masking import refuse_mask

_v = attrs.validators
LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


@attrs.define(kw_only=True)
class SACConfig(ActorCriticOffPolicyConfig):
    """Options of ``sac`` (TOML section ``[sac]``), on top of the replay ones."""

    actor_lr: float = attrs.field(default=1e-3, validator=_v.gt(0))  # Adam step size of the actor
    critic_lr: float = attrs.field(default=1e-3, validator=_v.gt(0))  # Adam step size of the twin critics
    alpha_lr: float = attrs.field(default=1e-3, validator=_v.gt(0))  # Adam step size of log(alpha)
    tau: float = attrs.field(default=0.005, validator=[_v.gt(0), _v.le(1)])  # Polyak rate of the targets
    initial_alpha: float = attrs.field(default=1.0, validator=_v.gt(0))  # entropy temperature at the start
    learn_alpha: bool = True  # false: alpha stays initial_alpha (SB3's ent_coef given as a number)
    target_entropy: Optional[float] = None  # None: -action_dim


def squashed_sample(loc, log_std):
    """A tanh-squashed Gaussian sample in [-1, 1] and its log-probability.

    The tanh correction uses ``log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u))``,
    which stays finite where ``tanh(u)`` rounds to +-1.
    """
    noise = tf.random.stateless_normal(tf.shape(loc), rlengine.random.seed())
    u = loc + tf.exp(log_std) * noise
    log_prob = -0.5 * tf.square(noise) - log_std - _HALF_LOG_2PI
    log_prob -= 2.0 * (math.log(2.0) - u - tf.nn.softplus(-2.0 * u))
    return tf.tanh(u), tf.reduce_sum(log_prob, axis=-1)


class SACInfo(NamedTuple):
    q: tf.Tensor  # [2, B] critics at the replayed action
    q_policy: tf.Tensor  # [2, B] critics at a fresh policy action
    log_prob: tf.Tensor  # [B] of that action
    target: tf.Tensor  # [B] soft clipped double-Q target
    mask: tf.Tensor  # [B]


class SAC(OffPolicyAlgorithm):
    config_class = SACConfig

    def __init__(self, time_step_spec, action_spec, config):
        super().__init__(time_step_spec, action_spec, config)
        if action_spec.dtype.is_integer:
            raise ConfigError("algorithm 'sac' supports Box (continuous) actions, not Discrete; use 'dqn'")
        refuse_mask(time_step_spec.observation, "sac")
        self.scale = ActionScale(action_spec, "sac")
        self.actor_encoder, self.critic_encoder = actor_and_critic_encoders(self, config)
        shared = self.actor_encoder is self.critic_encoder
        # A shared encoder is trained by the critic loss only: the actor sees its features through stop_gradient.
        self.actor_stops_gradient = shared and bool(self.critic_encoder.trainable_variables)
        act, hidden = self.scale.size, config.hidden_sizes
        self.actor = StackedMLP(1, self.actor_encoder.output_size, hidden, 2 * act, 0.01, name="actor")  # loc, log std
        self.critic = StackedMLP(2, self.critic_encoder.output_size + act, hidden, 1, 1.0, name="critic")
        self.target_critic = self.critic.copy("target_critic")
        self.target_critic_encoder = target_encoder(self, self.critic_encoder, "target_critic_encoder")
        self.log_alpha = tf.Variable(math.log(config.initial_alpha), name="log_alpha")
        self.target_entropy = -float(act) if config.target_entropy is None else float(config.target_entropy)
        # The critic side owns a shared encoder (its optimizer, its target); the actor side owns only its own.
        actor_parts = [self.actor] if shared else [self.actor, self.actor_encoder]
        critic_parts = [self.critic, self.critic_encoder]
        self.optimizers = [
            (tf_keras.optimizers.Adam(config.actor_lr, jit_compile=False), trainable_of(actor_parts)),
            (tf_keras.optimizers.Adam(config.critic_lr, jit_compile=False), trainable_of(critic_parts)),
            (tf_keras.optimizers.Adam(config.alpha_lr, jit_compile=False), [self.log_alpha]),
        ]
        self.targets = [(variables_of([self.target_critic, self.target_critic_encoder]), variables_of(critic_parts))]
        self.target_tau = config.tau

    def _actor(self, features):
        out = self.actor(features)[0]
        loc, log_std = tf.split(out, 2, axis=-1)
        return loc, tf.clip_by_value(log_std, LOG_STD_MIN, LOG_STD_MAX)

    def predict(self, time_step, state) -> PolicyStep:
        loc, _ = self._actor(self.actor_encoder(time_step.observation))
        return PolicyStep(self.scale.to_env(tf.tanh(loc)), state, ())

    def rollout(self, time_step, state) -> PolicyStep:
        unit, _ = squashed_sample(*self._actor(self.actor_encoder(time_step.observation)))
        return PolicyStep(self.scale.to_env(unit), state, ())

    def preprocess_experience(self, exp) -> Transition:
        return to_transitions(exp, self.config.gamma)

    def train_step(self, batch: Transition, state) -> PolicyStep:
        obs, critic_obs = encode(batch.observation, [self.actor_encoder, self.critic_encoder])
        if self.actor_stops_gradient:
            obs = tf.stop_gradient(obs)
        action = self.scale.to_unit(batch.action)
        policy_action, log_prob = squashed_sample(*self._actor(obs))
        q = tf.squeeze(self.critic(tf.concat([critic_obs, action], -1)), -1)
        q_policy = tf.squeeze(self.critic(tf.concat([critic_obs, policy_action], -1)), -1)
        target = tf.stop_gradient(self._target(batch))
        return PolicyStep((), state, SACInfo(q, q_policy, log_prob, target, batch.mask))

    def _target(self, batch: Transition):
        next_obs, next_critic_obs = encode(batch.next_observation, [self.actor_encoder, self.target_critic_encoder])
        next_action, next_log_prob = squashed_sample(*self._actor(next_obs))
        next_q = tf.squeeze(self.target_critic(tf.concat([next_critic_obs, next_action], -1)), -1)
        soft_value = tf.reduce_min(next_q, axis=0) - tf.exp(self.log_alpha) * next_log_prob
        return batch.reward + batch.discount * soft_value

    def train_complete(self, tape, info: SACInfo, weight=None):
        with tape:
            alpha = tf.exp(tf.stop_gradient(self.log_alpha))
            td = info.q - info.target
            critic_loss = weighted_mean(0.5 * tf.reduce_sum(tf.square(td), 0), info.mask, weight)
            actor_loss = weighted_mean(alpha * info.log_prob - tf.reduce_min(info.q_policy, 0), info.mask, weight)
            entropy_gap = tf.stop_gradient(info.log_prob + self.target_entropy)
            alpha_loss = -weighted_mean(self.log_alpha * entropy_gap, info.mask)
            if not self.config.learn_alpha:  # a zero gradient: Adam leaves log_alpha exactly where it is
                alpha_loss = 0.0 * alpha_loss
        # One gradient per loss: each reaches only its own optimizer's variables
        # (the actor loss must not train the critics through q_policy).
        grads_and_vars = []
        for loss, (_, variables) in zip((actor_loss, critic_loss, alpha_loss), self.optimizers):  # same order
            grads_and_vars += zip(tape.gradient(loss, variables), variables)
        terms = {"critic": critic_loss, "actor": actor_loss, "alpha_loss": alpha_loss}
        diagnostics = {"alpha": alpha, "entropy": -weighted_mean(info.log_prob, info.mask),
                       "q": weighted_mean(info.q[0], info.mask)}
        priority = tf.reduce_mean(tf.abs(td), 0) * info.mask if self.prioritized_replay else ()
        return LossInfo(critic_loss + actor_loss + alpha_loss, terms, priority, diagnostics), grads_and_vars
