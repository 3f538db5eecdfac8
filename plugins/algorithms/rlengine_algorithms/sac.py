"""Soft actor-critic (SAC) for bounded Box actions.

A tanh-squashed Gaussian actor, twin critics with Polyak-averaged targets
and a learned entropy temperature ``alpha``. Every update computes the three
losses from one pass over the batch and takes one gradient per loss from the
same (persistent) tape; the two critics are one stacked network.

Networks work in ``[-1, 1]`` action units (``ActionScale``): log-probabilities
are of the rescaled action, so ``target_entropy = -action_dim`` means the
same for every action range. In those units the policy is exactly
``rlengine.SquashedNormal(loc, scale, -1, 1)``; sampling and the log
probability are written out here because the bijector chain costs several
times more ops per update. With ``use_sde`` the noise is gSDE's instead
(:mod:`rlengine_algorithms.exploration`): held per copy, a learned linear map
of the actor's last hidden features. The encoders are as
:mod:`rlengine_algorithms.twin_critics` describes.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Optional

import attrs
import tensorflow as tf

import rlengine
from rlengine import LossInfo, PolicyStep
from rlengine_algorithms.critics import (
    StackedMLP,
    Transition,
    encode,
    target_encoder,
    trainable_of,
    variables_of,
    weighted_mean,
)
from rlengine_algorithms.exploration import HALF_LOG_2PI, StateDependentNoise, tanh_log_prob
from rlengine_algorithms.optimizers import FusedAdam
from rlengine_algorithms.twin_critics import ActorCriticOffPolicyConfig, TwinCriticAlgorithm

_v = attrs.validators
LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0


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
    #: gSDE: exploration noise that is a learned linear map of the actor's last hidden features, held over steps
    #: (rlengine_algorithms.exploration); for sparse rewards such as MountainCarContinuous-v0
    use_sde: bool = False
    sde_log_std_init: float = -3.0  # with use_sde: the initial log std of each (feature, action) weight
    #: with use_sde: steps between two draws of a copy's noise weights; 0: one draw per episode
    sde_sample_interval: int = attrs.field(default=0, validator=_v.ge(0))


def squashed_sample(loc, log_std):
    """A tanh-squashed Gaussian sample in [-1, 1] and its log-probability.

    The tanh correction uses ``log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u))``,
    which stays finite where ``tanh(u)`` rounds to +-1.
    """
    noise = tf.random.stateless_normal(tf.shape(loc), rlengine.random.seed())
    u = loc + tf.exp(log_std) * noise
    return tf.tanh(u), tanh_log_prob(u, -0.5 * tf.square(noise) - log_std - HALF_LOG_2PI)


class SACInfo(NamedTuple):
    q: tf.Tensor  # [2, B] critics at the replayed action
    q_policy: tf.Tensor  # [2, B] critics at a fresh policy action
    log_prob: tf.Tensor  # [B] of that action
    target: tf.Tensor  # [B] soft clipped double-Q target
    mask: tf.Tensor  # [B]


class SAC(TwinCriticAlgorithm):
    config_class = SACConfig

    def __init__(self, time_step_spec, action_spec, config):
        super().__init__(time_step_spec, action_spec, config)
        act, hidden = self.scale.size, config.hidden_sizes
        # loc and log std; with gSDE loc only, the noise's scale is the sde's log_std matrix
        heads = act if config.use_sde else 2 * act
        self.actor = StackedMLP(1, self.actor_encoder.output_size, hidden, heads, 0.01, name="actor",
                                hidden_matmul_dtype=config.hidden_matmul_dtype)
        self.sde = (StateDependentNoise(hidden[-1] if hidden else self.actor_encoder.output_size, act,
                                        config.sde_log_std_init, config.sde_sample_interval)
                    if config.use_sde else None)
        self.critic = StackedMLP(2, self.critic_encoder.output_size + act, hidden, 1, 1.0, name="critic",
                                 hidden_matmul_dtype=config.hidden_matmul_dtype)
        self.target_critic = self.critic.copy("target_critic")
        self.target_critic_encoder = target_encoder(self, self.critic_encoder, "target_critic_encoder")
        self.log_alpha = tf.Variable(math.log(config.initial_alpha), name="log_alpha")
        self.target_entropy = -float(act) if config.target_entropy is None else float(config.target_entropy)
        # The critic side owns a shared encoder (its optimizer, its target); the actor side owns only its own.
        actor_parts = [self.actor] if self.shared_encoder else [self.actor, self.actor_encoder]
        if self.sde is not None:
            actor_parts.append(self.sde)
        critic_parts = [self.critic, self.critic_encoder]
        self.optimizers = [
            (FusedAdam(config.actor_lr, jit_compile=False), trainable_of(actor_parts)),
            (FusedAdam(config.critic_lr, jit_compile=False), trainable_of(critic_parts)),
            (FusedAdam(config.alpha_lr, jit_compile=False), [self.log_alpha]),
        ]
        self.targets = [(variables_of([self.target_critic, self.target_critic_encoder]), variables_of(critic_parts))]
        self.target_tau = config.tau

    @property
    def state_spec(self):
        """gSDE's held noise weights per copy (:class:`~rlengine_algorithms.exploration.SDEState`), else none."""
        return () if self.sde is None else self.sde.state_spec

    def _actor(self, features):
        """``(loc, log std, last hidden features)``; the log std is None with gSDE (it has its own)."""
        hidden, out = self.actor.features_and_output(features)
        if self.sde is not None:
            return out[0], None, hidden[0]  # the sde clips the mean where it uses it
        loc, log_std = tf.split(out[0], 2, axis=-1)
        return loc, tf.clip_by_value(log_std, LOG_STD_MIN, LOG_STD_MAX), hidden[0]

    def _sample(self, features):
        """A fresh policy action in [-1, 1] and its log-probability (reparameterised)."""
        loc, log_std, hidden = self._actor(features)
        return squashed_sample(loc, log_std) if self.sde is None else self.sde.sample(loc, hidden)

    def predict(self, time_step, state) -> PolicyStep:
        loc, _, _ = self._actor(self.actor_encoder(time_step.observation))
        unit = tf.tanh(loc) if self.sde is None else self.sde.greedy(loc)
        return PolicyStep(self.scale.to_env(unit), state, ())

    def rollout(self, time_step, state) -> PolicyStep:
        loc, log_std, hidden = self._actor(self.actor_encoder(time_step.observation))
        if self.sde is None:
            unit, _ = squashed_sample(loc, log_std)
        else:
            unit, state = self.sde.explore(loc, hidden, state)
        return PolicyStep(self.scale.to_env(unit), state, ())

    def train_step(self, batch: Transition, state) -> PolicyStep:
        obs, critic_obs, action = self.encoded(batch)
        policy_action, log_prob = self._sample(obs)
        q = tf.squeeze(self.critic(tf.concat([critic_obs, action], -1)), -1)
        q_policy = tf.squeeze(self.critic(tf.concat([critic_obs, policy_action], -1)), -1)
        target = tf.stop_gradient(self._target(batch))
        return PolicyStep((), state, SACInfo(q, q_policy, log_prob, target, batch.mask))

    def _target(self, batch: Transition):
        next_obs, next_critic_obs = encode(batch.next_observation, [self.actor_encoder, self.target_critic_encoder])
        next_action, next_log_prob = self._sample(next_obs)
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
        if self.sde is not None:
            diagnostics["sde_std"] = tf.reduce_mean(tf.exp(self.sde.log_std))
        priority = tf.reduce_mean(tf.abs(td), 0) * info.mask if self.prioritized_replay else ()
        return LossInfo(critic_loss + actor_loss + alpha_loss, terms, priority, diagnostics), grads_and_vars
