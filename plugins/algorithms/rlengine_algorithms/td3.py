"""TD3: twin delayed deep deterministic policy gradient, for bounded Box actions.

A deterministic tanh actor, twin critics (one stacked network), target
policy smoothing, and delayed actor and target updates: the actor's
gradients are applied, and both targets moved, every ``policy_delay``-th
update only. The other updates skip the actor's forward and backward
passes, as Fujimoto et al.'s and Stable-Baselines3's do (1.18x the updates
per second on ``examples/td3_pendulum.toml`` here). Noise scales are in units
of half the action range, i.e. of the actor's ``[-1, 1]`` output. The
encoders are as :mod:`rlengine_algorithms.twin_critics` describes.
"""

from __future__ import annotations

from typing import NamedTuple

import attrs
import tensorflow as tf

import rlengine
from rlengine import LossInfo, PolicyStep, untracked
from rlengine_algorithms.critics import (
    StackedMLP,
    Transition,
    encode,
    target_encoder,
    trainable_of,
    variables_of,
    weighted_mean,
)
from rlengine_algorithms.exploration import OrnsteinUhlenbeckNoise
from rlengine_algorithms.optimizers import FusedAdam
from rlengine_algorithms.twin_critics import ActorCriticOffPolicyConfig, TwinCriticAlgorithm

_v = attrs.validators


@attrs.define(kw_only=True)
class TD3Config(ActorCriticOffPolicyConfig):
    """Options of ``td3`` (TOML section ``[td3]``), on top of the replay ones."""

    actor_lr: float = attrs.field(default=1e-3, validator=_v.gt(0))  # Adam step size of the actor
    critic_lr: float = attrs.field(default=1e-3, validator=_v.gt(0))  # Adam step size of the twin critics
    tau: float = attrs.field(default=0.005, validator=[_v.gt(0), _v.le(1)])  # Polyak rate of the targets
    exploration_noise: float = attrs.field(default=0.1, validator=_v.ge(0))  # std (or OU sigma) of the rollout noise
    #: "gaussian": drawn anew each step; "ornstein-uhlenbeck": a mean-reverting walk per copy, restarted each
    #: episode, that keeps pushing one way for a while (rlengine_algorithms.exploration)
    exploration_noise_type: str = attrs.field(default="gaussian",
                                              validator=_v.in_(("gaussian", "ornstein-uhlenbeck")))
    policy_noise: float = attrs.field(default=0.2, validator=_v.ge(0))  # std of the target smoothing noise
    #: the target smoothing noise is clipped to +-this, in half action ranges (the actor's [-1, 1] units)
    noise_clip: float = attrs.field(default=0.5, validator=_v.ge(0))
    policy_delay: int = attrs.field(default=2, validator=_v.gt(0))  # critic updates per actor and target update


class TD3Info(NamedTuple):
    q: tf.Tensor  # [2, B] critics at the replayed action
    q_policy: tf.Tensor  # [B] first critic at the actor's action (zeros on updates that skip the actor)
    target: tf.Tensor  # [B]
    mask: tf.Tensor  # [B]
    trains_actor: tf.Tensor  # [] bool: whether this update applies the actor's gradients


class TD3(TwinCriticAlgorithm):
    config_class = TD3Config

    def __init__(self, time_step_spec, action_spec, config):
        super().__init__(time_step_spec, action_spec, config)
        shared = self.shared_encoder
        act, hidden = self.scale.size, config.hidden_sizes
        self.actor = StackedMLP(1, self.actor_encoder.output_size, hidden, act, 1.0, name="actor",
                                hidden_matmul_dtype=config.hidden_matmul_dtype)
        self.critic = StackedMLP(2, self.critic_encoder.output_size + act, hidden, 1, 1.0, name="critic",
                                 hidden_matmul_dtype=config.hidden_matmul_dtype)
        self.target_actor = self.actor.copy("target_actor")
        self.target_critic = self.critic.copy("target_critic")
        self.target_critic_encoder = target_encoder(self, self.critic_encoder, "target_critic_encoder")
        self.target_actor_encoder = (self.target_critic_encoder if shared
                                     else target_encoder(self, self.actor_encoder, "target_actor_encoder"))
        # The critic side owns a shared encoder (its optimizer and its target); the actor side owns only its own.
        actor_parts = [self.actor] if shared else [self.actor, self.actor_encoder]
        target_actor_parts = [self.target_actor] if shared else [self.target_actor, self.target_actor_encoder]
        critic_parts, target_critic_parts = [self.critic, self.critic_encoder], [self.target_critic,
                                                                                 self.target_critic_encoder]
        self.actor_optimizer = FusedAdam(config.actor_lr, jit_compile=False)
        self.optimizers = [
            (self.actor_optimizer, trainable_of(actor_parts)),
            (FusedAdam(config.critic_lr, jit_compile=False), trainable_of(critic_parts)),
        ]
        self.targets = [(variables_of(target_actor_parts), variables_of(actor_parts)),
                        (variables_of(target_critic_parts), variables_of(critic_parts))]
        self.target_period, self.target_tau = config.policy_delay, config.tau
        # not checkpointed: a report, not state (a resumed run shows 0 until the actor's next update)
        untracked(self, "last_actor_loss", tf.Variable(0.0, trainable=False, name="last_actor_loss"))
        self.ou = (OrnsteinUhlenbeckNoise(act, config.exploration_noise)
                   if config.exploration_noise_type == "ornstein-uhlenbeck" else None)

    @property
    def state_spec(self):
        """The Ornstein-Uhlenbeck noise of each copy, else none."""
        return () if self.ou is None else self.ou.state_spec

    def _act(self, network: StackedMLP, features):
        return tf.tanh(network(features)[0])

    def predict(self, time_step, state) -> PolicyStep:
        return PolicyStep(self.scale.to_env(self._act(self.actor, self.actor_encoder(time_step.observation))),
                          state, ())

    def rollout(self, time_step, state) -> PolicyStep:
        unit = self._act(self.actor, self.actor_encoder(time_step.observation))
        if self.ou is None:
            noise = self.config.exploration_noise * tf.random.stateless_normal(tf.shape(unit), rlengine.random.seed())
        else:
            noise = state = self.ou.step(state)
        # Clipped here so that the stored action is the one the environment ran.
        return PolicyStep(self.scale.to_env(tf.clip_by_value(unit + noise, -1, 1)), state, ())

    def train_step(self, batch: Transition, state) -> PolicyStep:
        obs, critic_obs, action = self.encoded(batch)
        q = tf.squeeze(self.critic(tf.concat([critic_obs, action], -1)), -1)

        def actor_objective():  # the first critic at the actor's action
            policy_action = self._act(self.actor, obs)
            return tf.squeeze(self.critic(tf.concat([critic_obs, policy_action], -1), members=1), [0, -1])

        # Only updates that apply the actor's gradients pay for them (their backward pass runs
        # through the same branch).
        trains_actor = self._trains_actor()
        q_policy = tf.cond(trains_actor, actor_objective, lambda: tf.zeros_like(q[0]))
        target = tf.stop_gradient(self._target(batch))
        return PolicyStep((), state, TD3Info(q, q_policy, target, batch.mask, trains_actor))

    def _trains_actor(self):
        """Whether this update applies the actor's gradients: update k (from 1) does when k is a
        multiple of ``policy_delay`` (``num_updates`` counts the updates before this one)."""
        return tf.equal((self.num_updates + 1) % self.config.policy_delay, 0)

    def _target(self, batch: Transition):
        cfg = self.config
        next_obs, next_critic_obs = encode(batch.next_observation,
                                           [self.target_actor_encoder, self.target_critic_encoder])
        next_action = self._act(self.target_actor, next_obs)
        noise = tf.clip_by_value(cfg.policy_noise * tf.random.stateless_normal(tf.shape(next_action),
                                                                               rlengine.random.seed()),
                                 -cfg.noise_clip, cfg.noise_clip)
        next_action = tf.clip_by_value(next_action + noise, -1.0, 1.0)
        next_q = tf.squeeze(self.target_critic(tf.concat([next_critic_obs, next_action], -1)), -1)
        return batch.reward + batch.discount * tf.reduce_min(next_q, axis=0)

    def train_complete(self, tape, info: TD3Info, weight=None):
        with tape:
            td = info.q - info.target
            critic_loss = weighted_mean(tf.reduce_sum(tf.square(td), 0), info.mask, weight)
            actor_loss = -weighted_mean(info.q_policy, info.mask, weight)
        # The actor's gradients are zeros on updates that skip it, and not applied (apply_group).
        grads_and_vars = []
        for loss, (_, variables) in zip((actor_loss, critic_loss), self.optimizers):  # same order
            grads_and_vars += zip(tape.gradient(loss, variables, unconnected_gradients="zero"), variables)
        # Reported: the actor's loss at its latest update (updates in between have none).
        reported = tf.cond(info.trains_actor, lambda: self.last_actor_loss.assign(actor_loss),
                           lambda: tf.identity(self.last_actor_loss))
        terms = {"critic": critic_loss, "actor": reported}
        diagnostics = {"q": weighted_mean(info.q[0], info.mask)}
        priority = tf.reduce_mean(tf.abs(td), 0) * info.mask if self.prioritized_replay else ()
        return LossInfo(critic_loss + reported, terms, priority, diagnostics), grads_and_vars

    def apply_group(self, optimizer, grads_and_vars):
        if optimizer is not self.actor_optimizer or self.config.policy_delay == 1:
            return optimizer.apply_gradients(grads_and_vars)

        def apply():
            optimizer.apply_gradients(grads_and_vars)
            return tf.constant(0)

        # num_updates is incremented after the groups, so this is train_step's decision
        tf.cond(self._trains_actor(), apply, lambda: tf.constant(0))
