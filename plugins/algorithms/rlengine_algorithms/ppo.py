"""PPO: the clipped surrogate objective over several epochs of minibatches."""

from __future__ import annotations

import attrs
import tensorflow as tf

from rlengine_algorithms.actor_critic import ActorCritic, ActorCriticConfig, BatchInfo, _schedules, _unit


@attrs.define(kw_only=True)
class PPOConfig(ActorCriticConfig):
    """Options of ``ppo`` (TOML section ``[ppo]``), on top of the actor-critic ones."""

    learning_rate: float = attrs.field(default=3e-4, validator=attrs.validators.gt(0))
    gae_lambda: float = attrs.field(default=0.95, validator=_unit)
    num_epochs: int = attrs.field(default=10, validator=attrs.validators.gt(0))
    mini_batch_size: int = attrs.field(default=64, validator=attrs.validators.ge(0))
    normalize_advantages: bool = True
    clip_range: float = attrs.field(default=0.2, validator=attrs.validators.gt(0))  # ratio kept in [1 - this, 1 + this]
    #: "linear": clip_range decays to 0 by the end of train.num_env_steps
    clip_schedule: str = attrs.field(default="constant", validator=_schedules)
    value_clip_range: float = attrs.field(default=0.0, validator=attrs.validators.ge(0))  # 0: off


class PPO(ActorCritic):
    config_class = PPOConfig

    def clip_range(self):
        cfg = self.config
        return cfg.clip_range * (1.0 - self.progress) if cfg.clip_schedule == "linear" else cfg.clip_range

    def policy_loss(self, log_prob, advantage, batch: BatchInfo):
        clip = self.clip_range()
        ratio = tf.exp(log_prob - batch.old_log_prob)
        surrogate = tf.minimum(ratio * advantage, tf.clip_by_value(ratio, 1 - clip, 1 + clip) * advantage)
        clipped = tf.cast(tf.abs(ratio - 1.0) > clip, tf.float32)
        approx_kl = (ratio - 1.0) - (log_prob - batch.old_log_prob)
        return -surrogate, {"clip_fraction": clipped, "approx_kl": approx_kl}

    def value_loss(self, value, batch: BatchInfo):
        loss = tf.square(batch.ret - value)
        if self.config.value_clip_range:
            c = self.config.value_clip_range
            clipped = batch.old_value + tf.clip_by_value(value - batch.old_value, -c, c)
            loss = tf.maximum(loss, tf.square(batch.ret - clipped))
        return loss
