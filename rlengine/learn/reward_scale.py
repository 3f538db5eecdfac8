"""Reward normalisation (``train.normalize_reward``): training rewards divided by a running standard
deviation of the discounted return, as Stable-Baselines3's ``VecNormalize(norm_reward=True)`` does.

The learner owns it and drives it so::

    reward_scale.observe(rows)               # collected [T, B] rows in time order: returns, then moments
    experience = reward_scale.scaled(experience)   # reward / sqrt(var + epsilon), clipped

On-policy, each unroll is observed (rows 1..T: row 0 repeats the previous unroll's last row) and then
scaled, in the learner's one graph call. From replay, rows are observed as they are stored, the buffer
keeps the raw rewards, and every sampled batch is scaled with the statistics of that moment, so
the whole buffer shares one scale. Evaluation and the reported episode returns never pass through
here: they stay in the game's units.

Each environment copy (by ``env_id``) carries its own discounted return ``R = gamma * R + reward``,
restarted where a row is ``FIRST``; the moments are those of every ``R`` of a non-``FIRST`` row.
The return's mean is not subtracted (a constant shift of rewards would change the task). The
variables are checkpointed with the run.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from rlengine.api.data import Experience, StepType

#: Added to the variance before the square root, in float64 (as the normalize transformer does).
EPSILON = 1e-8


class RewardScale(tf.Module):
    """Running return statistics of every environment copy, and the scale they give."""

    def __init__(self, num_envs: int, gamma: float, clip: float):
        super().__init__(name="reward_scale")
        self.gamma, self.clip = float(gamma), float(clip)
        self.returns = tf.Variable(tf.zeros([num_envs], tf.float64), trainable=False, name="returns")
        self.count = tf.Variable(0.0, dtype=tf.float64, trainable=False, name="count")
        self.mean = tf.Variable(0.0, dtype=tf.float64, trainable=False, name="mean")
        self.var = tf.Variable(1.0, dtype=tf.float64, trainable=False, name="var")  # 1: unscaled at first

    def observe(self, rows: Experience) -> None:
        """Advance each copy's return over ``[T, B]`` rows (time order) and merge those returns' moments."""
        rewards = tf.cast(rows.reward, tf.float64)
        first = tf.equal(rows.step_type, StepType.FIRST)
        env = tf.cast(rows.env_id, tf.int32)[..., None]

        def advance(returns: Any, row: tuple) -> Any:
            reward, is_first, ids = row
            carried = tf.where(is_first, tf.zeros_like(reward), self.gamma * tf.gather_nd(returns, ids))
            return tf.tensor_scatter_nd_update(returns, ids, carried + reward)

        # scan keeps the whole vector per row: gather each row's returns back from it
        per_row = tf.scan(advance, (rewards, first, env), initializer=tf.convert_to_tensor(self.returns))
        returns = tf.gather(per_row, env[..., 0], batch_dims=1)  # [T, B]
        self._merge(tf.boolean_mask(returns, tf.logical_not(first)))
        self.returns.assign(per_row[-1])  # callers pass at least one row (unroll_length >= 1)

    def _merge(self, values: Any) -> None:
        """Fold the moments of ``values`` into count, mean and var (Chan's parallel formula)."""
        n = tf.cast(tf.size(values), tf.float64)
        batch_mean = tf.math.divide_no_nan(tf.reduce_sum(values), n)
        batch_var = tf.math.divide_no_nan(tf.reduce_sum(tf.square(values - batch_mean)), n)
        count = tf.convert_to_tensor(self.count)
        total = count + n
        weight = tf.math.divide_no_nan(n, total)
        delta = batch_mean - self.mean
        m2 = self.var * count + batch_var * n + tf.square(delta) * count * weight
        self.mean.assign_add(delta * weight)
        self.var.assign(tf.where(total > 0, tf.math.divide_no_nan(m2, total), self.var))
        self.count.assign(total)

    def std(self) -> Any:
        """What rewards are divided by (float32)."""
        return tf.cast(tf.sqrt(self.var + EPSILON), tf.float32)

    def scaled(self, experience: Experience) -> Experience:
        """``experience`` with its rewards divided by :meth:`std` and clipped to ``[-clip, clip]``."""
        reward = experience.reward
        scaled = tf.clip_by_value(tf.cast(reward, tf.float32) / self.std(), -self.clip, self.clip)
        return experience._replace(reward=tf.cast(scaled, reward.dtype))
