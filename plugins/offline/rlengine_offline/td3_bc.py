"""TD3+BC (``td3_bc``, Fujimoto & Gu 2021, "A Minimalist Approach to Offline Reinforcement Learning").

TD3 from the algorithms plugin, its critics and targets unchanged, with the actor's objective
regularised toward the dataset's actions::

    actor loss = -lambda * mean Q1(s, pi(s)) + mean (pi(s) - a)^2,   lambda = alpha / mean |Q1(s, pi(s))|

``lambda`` is held constant in the gradient (the authors' code detaches it) and the squared error is
averaged over the batch and the action's dimensions, in the environment's action units, as their code
does. TD3's own loss is ``-mean q_policy``; here ``q_policy`` is ``lambda * Q1 - error`` per row, so its
update, delayed actor and targets are reused as they are. The paper also normalises observations by the
dataset's mean and std; an offline run feeds observations as they are, so that part is not here.
"""

from __future__ import annotations

import attrs
import tensorflow as tf
from rlengine_algorithms.td3 import TD3, TD3Config

from rlengine import PolicyStep

_v = attrs.validators


@attrs.define(kw_only=True)
class TD3BCConfig(TD3Config):
    """Options of ``td3_bc`` (TOML section ``[td3_bc]``): TD3's, with the paper's defaults."""

    actor_lr: float = attrs.field(default=3e-4, validator=_v.gt(0))  # Adam step size of the actor
    critic_lr: float = attrs.field(default=3e-4, validator=_v.gt(0))  # Adam step size of the twin critics
    #: weight of the Q term against the behaviour-cloning term (lambda = alpha / mean |Q|); 0: pure BC
    alpha: float = attrs.field(default=2.5, validator=_v.ge(0))


class TD3BC(TD3):
    config_class = TD3BCConfig

    def train_step(self, batch, state) -> PolicyStep:
        step = super().train_step(batch, state)
        info = step.info

        def regularised():  # only on the updates that train the actor, as TD3's own objective
            policy = self.scale.to_env(self._act(self.actor, self.encoded(batch)[0]))
            error = tf.reshape(tf.square(policy - tf.cast(batch.action, policy.dtype)), [tf.shape(policy)[0], -1])
            mask_sum = tf.maximum(tf.reduce_sum(info.mask), 1.0)
            scale = tf.stop_gradient(self.config.alpha * mask_sum
                                     / tf.maximum(tf.reduce_sum(tf.abs(info.q_policy) * info.mask), 1e-6))
            return scale * info.q_policy - tf.reduce_mean(error, -1)

        q_policy = tf.cond(info.trains_actor, regularised, lambda: info.q_policy)
        return step._replace(info=info._replace(q_policy=q_policy))
