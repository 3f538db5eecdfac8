"""The NaN guard's check of one update: which loss term, total or gradient is not finite.

The learner applies an update's gradients only when ``FiniteCheck(...).ok``;
a skipped update records ``culprit()`` so the run's error can name it.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from rlengine.api.data import LossInfo


def all_finite(tensors: list) -> Any:
    """One boolean: whether every element of every tensor (None skipped) is finite."""
    checks = [tf.reduce_all(tf.math.is_finite(t)) for t in tensors if t is not None]
    return tf.reduce_all(tf.stack(checks)) if checks else tf.constant(True)


class FiniteCheck:
    """Which of an update's loss terms, total loss and gradients are not finite, each checked once.

    ``ok`` guards the update (the total and the gradients); ``culprit`` is a string tensor
    naming the first value that is not finite: an extra term first, since the total is
    usually their sum and the term names the culprit more precisely, else the total, else
    a gradient. Only a skipped update reads it.
    """

    def __init__(self, loss_info: LossInfo, grads_and_vars: list):
        terms = [(f"loss term {k!r}", v) for k, v in sorted(loss_info.extra.items())]
        terms = [(n, t) for n, t in terms if tf.as_dtype(t.dtype).is_floating]
        guarded = [("the total loss", loss_info.loss)]
        guarded += [(f"the gradient of {v.name!r}", g) for g, v in grads_and_vars if g is not None]
        self.names = [n for n, _ in terms + guarded]
        self.bad = tf.logical_not(tf.stack([tf.reduce_all(tf.math.is_finite(t)) for _, t in terms + guarded]))
        self.ok = tf.logical_not(tf.reduce_any(self.bad[len(terms):]))

    def culprit(self) -> Any:
        names = tf.constant(self.names + ["an unknown value"])
        first = tf.where(tf.reduce_any(self.bad), tf.argmax(tf.cast(self.bad, tf.int32)), len(self.names))
        return tf.gather(names, first)
