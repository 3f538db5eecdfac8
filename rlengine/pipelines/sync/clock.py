"""The wall clock read inside a graph, so a one-call iteration can still say how long collecting took.

``tf.timestamp`` reads it without leaving the graph, but runs with op determinism
(``train.deterministic``) refuse that op: they read it from Python, through ``tf.numpy_function``::

    clock = GraphClock(train.deterministic)
    start = clock.now()                     # Python, before the call
    ... collected = clock.in_graph() ...    # inside the graph, after the unroll's last step
    collect_seconds = float(collected) - start
"""

from __future__ import annotations

import time
from typing import Any

import tensorflow as tf


class GraphClock:
    """Seconds since the epoch, in Python and inside a graph (``time.time``'s clock, as ``tf.timestamp`` reads)."""

    def __init__(self, deterministic: bool):
        self.deterministic = deterministic

    @staticmethod
    def now() -> float:
        return time.time()

    def in_graph(self) -> Any:
        """A float64 scalar read when the graph runs this op."""
        if self.deterministic:
            return tf.numpy_function(time.time, [], tf.float64, stateful=True)
        return tf.timestamp()
