"""The sums of an update loop's loss scalars, and the summaries they average into.

The learner's update loops carry every ``LossInfo`` scalar summed as one
float32 vector: a loop variable each would cost about five ops an update
(merge, switch, identity, next iteration, add)::

    totals = LossTotals(specs.loss, "PPO")
    sums = totals.zeros()
    for update in loop:                       # a graph loop
        sums = totals.add(sums, update())     # checked against the prepared spec when traced
    summaries = totals.averages(sums, num_updates)   # {"loss/total": ..., "loss/<term>": ..., "diagnostics/<name>": ...}
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from rlengine.api.data import LossInfo
from rlengine.errors import SpecMismatchError


def scalars(loss: LossInfo) -> tuple:
    """The summed parts of a LossInfo (per-sample priorities are not averaged)."""
    return (loss.loss, dict(loss.extra), dict(loss.diagnostics))


def summary_names(loss: LossInfo) -> list:
    """The summary key of each leaf of ``scalars(loss)``, in flattening order (dicts by sorted key)."""
    return (["loss/total"] + [f"loss/{k}" for k in sorted(loss.extra)]
            + [f"diagnostics/{k}" for k in sorted(loss.diagnostics)])


class LossTotals:
    """Sums and averages of the scalars of ``loss_spec`` (the prepared ``specs.loss``); ``algorithm`` is the
    name an error gives when an update returns other scalars."""

    def __init__(self, loss_spec: LossInfo, algorithm: str):
        self.structure = scalars(loss_spec)
        self.specs = tf.nest.flatten(self.structure)
        self.names = summary_names(loss_spec)
        self.algorithm = algorithm

    def zeros(self) -> Any:
        return tf.zeros([sum(s.shape.num_elements() for s in self.specs)])

    def add(self, totals: Any, loss: LossInfo) -> Any:
        """``totals`` plus the update's scalars; a term that differs from the spec is named, not misfiled."""
        got = tf.nest.flatten(scalars(loss))
        mismatch = "" if summary_names(loss) == self.names else f"returned {summary_names(loss)}"
        for name, spec, value in zip(self.names, self.specs, got):
            size = value.shape.num_elements()  # None: known only when it runs
            if not mismatch and (value.dtype != spec.dtype or size not in (None, spec.shape.num_elements())):
                mismatch = f"returned {name} as {value.dtype.name}{value.shape} against {spec.dtype.name}{spec.shape}"
        if mismatch:
            raise SpecMismatchError(
                f"algorithm {self.algorithm}: train_complete() {mismatch} in the learner, unlike at "
                f"spec preparation ({self.names}); return the same loss terms and diagnostics, as float32 scalars, "
                "on every call (with and without a weight)")
        return totals + tf.concat([tf.reshape(t, [-1]) for t in got], 0)

    def averages(self, totals: Any, count: Any) -> dict:
        """The summary scalars: loss terms under ``loss/``, what only watches training under ``diagnostics/``."""
        parts = tf.split(totals / tf.cast(count, tf.float32), [s.shape.num_elements() for s in self.specs])
        loss, extra, diagnostics = tf.nest.pack_sequence_as(
            self.structure, [tf.reshape(p, s.shape) for p, s in zip(parts, self.specs)])
        out = {"loss/total": loss}
        out.update({f"loss/{k}": v for k, v in extra.items()})
        out.update({f"diagnostics/{k}": v for k, v in diagnostics.items()})
        return out
