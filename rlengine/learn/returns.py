"""Return helpers shared by algorithms (public: ``rlengine.n_step_return``)."""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from rlengine.api.data import StepType


def n_step_return(reward: Any, discount: Any, step_type: Any, gamma: float) -> tuple:
    """n-step returns of the transitions starting at row 0 of ``[n + 1, B]`` sequences.

    Follows the row convention (``reward[t]``/``discount[t]`` belong to
    arriving at row ``t``). Accumulates ``reward[1..n]`` with ``gamma``,
    stopping at the first LAST row (the episode ends there; what follows is a
    new episode). Returns ``(ret, bootstrap_discount, bootstrap_index)``:
    the target is ``ret + bootstrap_discount * V(row bootstrap_index)``,
    where ``bootstrap_discount`` already holds ``gamma ** k`` and the
    environment discount (0 after termination, kept after truncation).
    """
    n = reward.shape[0] - 1
    ret = tf.zeros_like(reward[0])
    scale = tf.ones_like(reward[0])  # gamma^k times the discounts seen so far
    alive = tf.cast(step_type[0] != StepType.LAST, reward.dtype)  # row 0 LAST: no transition
    index = tf.zeros_like(step_type[0])
    for k in range(1, n + 1):
        ret += alive * scale * reward[k]
        scale = tf.where(alive > 0, scale * gamma * discount[k], scale)
        index = tf.where(alive > 0, tf.fill(tf.shape(index), k), index)
        alive *= tf.cast(step_type[k] != StepType.LAST, reward.dtype)
    return ret, scale, index
