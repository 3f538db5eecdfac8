"""Legal-action masks: an ``action_mask`` observation leaf limits what a Discrete policy may do.

The mask has one entry per action (bool, integer or float; nonzero means
legal). Policies give illegal actions the lowest logit or Q-value their
dtype holds, so a Categorical never samples them and an argmax never picks
them; the dtype's lowest value rather than ``-inf`` keeps ``0 * logit``
(entropies, gradients) finite.
"""

from __future__ import annotations

from typing import Any, Optional

import tensorflow as tf

from rlengine import ConfigError, action_mask_of


def mask_spec(observation_spec: Any, algorithm: str, num_actions: int) -> Optional[tf.TensorSpec]:
    """The observation's ``action_mask`` spec after checking it has one entry per action; None without one."""
    spec = action_mask_of(observation_spec)
    if spec is None:
        return None
    shape = list(spec.shape)
    if len(shape) != 1:
        raise ConfigError(f"algorithm {algorithm!r}: observation 'action_mask' must be a vector of {num_actions} "
                          f"entries (one per action), got shape {shape}")
    if shape[0] != num_actions:
        raise ConfigError(f"algorithm {algorithm!r}: observation 'action_mask' has {shape[0]} entries but the "
                          f"action space has {num_actions} actions; give the mask one entry per action")
    return spec


def refuse_mask(observation_spec: Any, algorithm: str) -> None:
    """Continuous actions have nothing to mask: refuse an ``action_mask`` leaf rather than ignore it."""
    if action_mask_of(observation_spec) is not None:
        raise ConfigError(f"algorithm {algorithm!r} has continuous actions, which an observation 'action_mask' "
                          f"cannot mask; drop the mask from the observation or use a Discrete-action algorithm "
                          f"('ppo', 'ac' or 'dqn')")


def legal_actions(mask: tf.Tensor) -> tf.Tensor:
    """``[B, A]`` bool: True where legal.

    A row with no legal action at all (some environments send all zeros with
    the last step of an episode) counts as all legal, so its values stay
    finite where they are bootstrapped or stored.
    """
    # compared as float32: TF Lite has no NotEqual kernel for uint8, and exported policies take the mask as given
    legal = mask if mask.dtype == tf.bool else tf.not_equal(tf.cast(mask, tf.float32), 0.0)
    return tf.logical_or(legal, tf.logical_not(tf.reduce_any(legal, axis=-1, keepdims=True)))


def mask_values(values: tf.Tensor, mask: Optional[tf.Tensor]) -> tf.Tensor:
    """Logits or Q-values ``[B, A]`` with illegal entries at the dtype's lowest value (unchanged without a mask)."""
    if mask is None:
        return values
    return tf.where(legal_actions(mask), values, tf.constant(values.dtype.min, values.dtype))


def uniform_legal_action(mask: tf.Tensor, seed: tf.Tensor) -> tf.Tensor:
    """``[B]`` int32: one action drawn uniformly among each row's legal ones."""
    logits = tf.where(legal_actions(mask), 0.0, tf.float32.min)
    return tf.random.stateless_categorical(logits, 1, seed, dtype=tf.int32)[:, 0]
