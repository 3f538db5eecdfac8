"""Conservative Q-learning (``cql``, Kumar, Zhou, Tucker & Levine 2020, "Conservative Q-Learning for
Offline Reinforcement Learning"), the CQL(H) variant on SAC, for Box actions.

Offline, a critic trained only by its TD error is free to overestimate the actions the dataset never
shows, and the actor goes straight for them. CQL(H) adds to each critic's loss a term that pushes
its values down over all actions (a soft maximum) and up at the dataset's action::

    critic_i loss = SAC's TD loss + alpha * mean (log integral exp Q_i(s, a) da - Q_i(s, a_data))

The integral is estimated by importance sampling (the paper's appendix), from ``num_sampled_actions``
(N) actions of each of three proposals: uniform over the ``[-1, 1]`` action box (log density
``-dim * log 2``), the current policy at ``s`` and the current policy at ``s'``, all scored by the critic
at ``s``::

    log integral exp Q(s, a) da  ~  logsumexp_j (Q(s, a_j) - log mu_j(a_j)) - log(3 N)

(the constant ``log 3N`` makes the estimate a proper one; it leaves the gradient unchanged). The
sampled actions and their densities are constants: the term trains the critics (and their encoder)
only. Everything else is the algorithms plugin's SAC unchanged: twin critics and Polyak targets,
the tanh-squashed Gaussian actor, the learnt entropy temperature and its soft target.

By default ``alpha`` is fixed (the paper's non-Lagrangian form, its choice for the Gym tasks). With
``target_action_gap`` (tau) > 0 it is the paper's Lagrangian form, its choice for AntMaze and Adroit: the
term becomes ``alpha' * (alpha * gap_i - tau)`` for each critic, and ``alpha'`` (from 1, kept in
``[0, 1e6]``) is learnt by dual ascent, growing while the weighted gap exceeds tau and shrinking below it,
so the critics hold the gap near tau whatever the scale of the rewards.

With ``bc_warmup_updates`` > 0 the actor first learns by behaviour cloning, as the authors' code does (its
``policy_eval_start``): for that many updates it maximises the log-likelihood of the dataset's action,
``alpha x log pi(a|s) - log pi(a_data|s)``, in place of the critics' value of its own, while the critics
already learn as above; then SAC's actor loss takes over.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import attrs
import tensorflow as tf
from rlengine_algorithms.critics import Transition, weighted_mean
from rlengine_algorithms.exploration import HALF_LOG_2PI, tanh_log_prob
from rlengine_algorithms.optimizers import FusedAdam
from rlengine_algorithms.sac import SAC, SACConfig, SACInfo

import rlengine
from rlengine import PolicyStep
from rlengine_offline.plugin import refuse_discrete

_v = attrs.validators


@attrs.define(kw_only=True)
class CQLConfig(SACConfig):
    """Options of ``cql`` (TOML section ``[cql]``): SAC's, with the CQL authors' step sizes, plus the
    conservative term's."""

    actor_lr: float = attrs.field(default=1e-4, validator=_v.gt(0))  # Adam step size of the actor
    critic_lr: float = attrs.field(default=3e-4, validator=_v.gt(0))  # Adam step size of the twin critics
    alpha_lr: float = attrs.field(default=1e-4, validator=_v.gt(0))  # Adam step size of the entropy temperature
    #: weight of the conservative term (logsumexp of Q over sampled actions - Q at the dataset's action)
    #: in each critic's loss; the paper's 5.0 for its Gym tasks; 0: SAC on the dataset
    alpha: float = attrs.field(default=5.0, validator=_v.ge(0))
    #: actions drawn from each of the three proposals (uniform, policy at s, policy at s') per state
    num_sampled_actions: int = attrs.field(default=10, validator=_v.ge(1))
    #: > 0: the Lagrangian form, alpha' learnt to hold each critic's alpha x gap near this value (the
    #: paper's 5 or 10 for AntMaze); 0: alpha fixed
    target_action_gap: float = attrs.field(default=0.0, validator=_v.ge(0))
    #: Adam step size of log alpha' (the Lagrangian form only)
    alpha_prime_lr: float = attrs.field(default=3e-4, validator=_v.gt(0))
    #: updates in which the actor clones the dataset's actions before it maximises the critics' value
    #: (the authors' ``policy_eval_start``, 40000 in their code for the Gym tasks); 0: none
    bc_warmup_updates: int = attrs.field(default=0, validator=_v.ge(0))


def conservative_gap(q_sampled, log_density, q_data):
    """Each critic's ``log integral exp Q(s, a) da - Q(s, a_data)`` per row, the integral by importance sampling.

    ``q_sampled`` is ``[critics, M, B]`` (M sampled actions per row), ``log_density`` ``[M, B]`` the log
    density of the proposal each came from, ``q_data`` ``[critics, B]``; returns ``[critics, B]``.
    """
    samples = tf.cast(tf.shape(q_sampled)[1], q_sampled.dtype)
    return tf.reduce_logsumexp(q_sampled - log_density, axis=1) - tf.math.log(samples) - q_data


class CQLInfo(NamedTuple):
    sac: SACInfo  # what SAC's losses read
    gap: tf.Tensor  # [2, B] conservative_gap of each critic
    data_log_prob: tf.Tensor  # [B] log pi(a_data|s), the actor's likelihood of the dataset's action


class CQL(SAC):
    config_class = CQLConfig

    def __init__(self, time_step_spec, action_spec, config):
        refuse_discrete("cql", action_spec)
        if config.bc_warmup_updates and config.use_sde:
            raise rlengine.ConfigError("cql.bc_warmup_updates clones the dataset's actions by the actor's own "
                                       "Gaussian, which cql.use_sde replaces: set one of them only")
        super().__init__(time_step_spec, action_spec, config)
        self.lagrangian = config.target_action_gap > 0
        if self.lagrangian:
            self.log_alpha_prime = tf.Variable(0.0, name="log_alpha_prime")
            self.optimizers.append((FusedAdam(config.alpha_prime_lr, jit_compile=False), [self.log_alpha_prime]))

    def train_step(self, batch: Transition, state) -> PolicyStep:
        step = super().train_step(batch, state)
        obs, critic_obs, _ = self.encoded(batch)
        next_obs = self.actor_encoder(batch.next_observation)
        if self.actor_stops_gradient:
            next_obs = tf.stop_gradient(next_obs)
        actions, log_density = self._sampled_actions(obs, next_obs)
        n = tf.shape(actions)[0]  # 3 N
        repeated = tf.tile(critic_obs[None], [n, 1, 1])
        inputs = tf.concat([repeated, actions], -1)
        q_sampled = tf.reshape(self.critic(tf.reshape(inputs, [-1, inputs.shape[-1]])), [2, n, -1])
        gap = conservative_gap(q_sampled, log_density, step.info.q)
        data_log_prob = self._log_prob_of(obs, self.scale.to_unit(batch.action))
        sac = step.info
        if self.config.bc_warmup_updates:
            # SAC's actor loss maximises min_i q_policy[i]; while warming up, that is the data's log-likelihood.
            warming_up = self.optimizers[0][0].iterations < self.config.bc_warmup_updates
            sac = sac._replace(q_policy=tf.where(warming_up, tf.stack([data_log_prob] * 2), sac.q_policy))
        return step._replace(info=CQLInfo(sac, gap, data_log_prob))

    def _log_prob_of(self, obs, unit_action):
        """``[B]`` log pi(a|s) of actions in [-1, 1] under the tanh-squashed Gaussian (SAC's actor without gSDE)."""
        loc, log_std, _ = self._actor(obs)
        if log_std is None:
            return tf.zeros_like(loc[:, 0])  # gSDE: no per-state Gaussian to score (the warm-up refuses it)
        u = tf.atanh(tf.clip_by_value(unit_action, -1.0 + 1e-6, 1.0 - 1e-6))
        return tanh_log_prob(u, -0.5 * tf.square((u - loc) * tf.exp(-log_std)) - log_std - HALF_LOG_2PI)

    def _sampled_actions(self, obs, next_obs):
        """``([3N, B, dim] actions in [-1, 1], [3N, B] log densities)``: N uniform, N of the policy at ``s``,
        N of the policy at ``s'``; constants (no gradient reaches the actor through them)."""
        n, dim = self.config.num_sampled_actions, self.scale.size
        batch = tf.shape(obs)[0]
        uniform = tf.random.stateless_uniform([n, batch, dim], rlengine.random.seed(), -1.0, 1.0)
        parts, densities = [uniform], [tf.fill([n, batch], -dim * math.log(2.0))]
        for features in (obs, next_obs):
            repeated = tf.reshape(tf.tile(features[None], [n, 1, 1]), [n * batch, -1])
            action, log_prob = self._sample(repeated)
            parts.append(tf.reshape(action, [n, batch, dim]))
            densities.append(tf.reshape(log_prob, [n, batch]))
        return tf.stop_gradient(tf.concat(parts, 0)), tf.stop_gradient(tf.concat(densities, 0))

    def train_complete(self, tape, info: CQLInfo, weight=None):
        loss_info, grads_and_vars = super().train_complete(tape, info.sac, weight)
        cfg = self.config
        with tape:
            weighted_gaps = cfg.alpha * tf.stack([weighted_mean(info.gap[i], info.sac.mask, weight) for i in (0, 1)])
            if self.lagrangian:
                alpha_prime = tf.clip_by_value(tf.exp(self.log_alpha_prime), 0.0, 1e6)
                excess = weighted_gaps - cfg.target_action_gap
                conservative = tf.reduce_sum(tf.stop_gradient(alpha_prime) * excess)
                alpha_prime_loss = -0.5 * tf.reduce_sum(alpha_prime * tf.stop_gradient(excess))  # dual ascent
            else:
                conservative = tf.reduce_sum(weighted_gaps)
        # The term's gradient joins the critics' (the same variables, SAC's critic optimizer).
        critic_variables = self.optimizers[1][1]
        extra = dict(zip((v.ref() for v in critic_variables), tape.gradient(conservative, critic_variables)))
        grads_and_vars = [(_add(grad, extra.get(var.ref())), var) for grad, var in grads_and_vars]
        terms = dict(loss_info.extra, conservative=conservative)
        diagnostics = dict(loss_info.diagnostics, conservative_gap=weighted_mean(info.gap[0], info.sac.mask),
                           data_log_prob=weighted_mean(info.data_log_prob, info.sac.mask))
        if self.lagrangian:
            grads_and_vars.append((tape.gradient(alpha_prime_loss, self.log_alpha_prime), self.log_alpha_prime))
            terms["alpha_prime"] = alpha_prime_loss
            diagnostics["alpha_prime"] = alpha_prime
        added = conservative + alpha_prime_loss if self.lagrangian else conservative
        return loss_info._replace(loss=loss_info.loss + added, extra=terms, diagnostics=diagnostics), grads_and_vars


def _add(grad, extra):
    """A gradient plus another, either possibly None (unconnected)."""
    if extra is None:
        return grad
    return extra if grad is None else grad + extra
