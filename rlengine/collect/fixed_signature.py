"""A ``tf.function`` called with one signature for a whole run, without matching its arguments at every call.

Before a ``tf.function`` runs its graph, Python matches the arguments against
its traces: a trace type for every nested value, hashed and compared. For the
collector's carry (nine arrays in named tuples) that took about 340 µs a call
here, more than a SAC update: an unroll of one step took 800 µs through the
``tf.function`` and 460 µs through the concrete function of its trace.

The engine's hot functions (the collector's unroll, the learner's update, the
off-policy iteration) take arguments of one structure, dtypes and shapes all
run long. So after the first call, which traces, this calls the concrete
function of that trace with the flat arrays, once each array's dtype and shape
are checked against the first call's. Anything else (another shape, a Python
value, a variable, a call inside a graph) goes through the ``tf.function``,
which traces again if it must; the last few traces called with tensors are kept::

    self.run = FixedSignatureFunction(self._run)   # instead of tf.function(self._run, autograph=False)
    experience, carry = self.run(carry)            # the first call traces; later calls run the trace

The arguments' nesting must stay the same between calls (only the arrays are
checked): it does for these callers, whose arguments are the previous call's
outputs or come from the run's specs.
"""

from __future__ import annotations

from typing import Any, Callable

import tensorflow as tf

#: traces kept for the fast call; more signatures than this go through the tf.function's own matching
MAX_TRACES = 4


class FixedSignatureFunction:
    """``tf.function(fn, autograph=False)``, whose calls after the first skip the per-call matching."""

    def __init__(self, fn: Callable, **options: Any):
        self.function = tf.function(fn, autograph=False, **options)  # the tf.function, for tests and trace counts
        # the traces called so far, each as (concrete function, (dtype, shape) of each flat argument); a
        # tuple replaced whole, so that another thread never sees a function with another's signature
        self._traces: tuple = ()

    def __call__(self, *args: Any) -> Any:
        flat = tf.nest.flatten(args)
        if tf.executing_eagerly():
            for concrete, signature in self._traces:
                if _matches(flat, signature):
                    # the concrete function's own call would match the structure again: its flat call does not
                    return concrete._call_flat(flat, concrete.captured_inputs)
        result = self.function(*args)
        self._remember(args, flat)
        return result

    def __getattr__(self, name: str) -> Any:  # the rest of the tf.function's API (get_concrete_function, ...)
        return getattr(self.function, name)

    def _remember(self, args: tuple, flat: list) -> None:
        """Keep the trace an eager call with tensors only just ran (a few: the async learner's unrolls may
        alternate between two batch sizes)."""
        if tf.executing_eagerly() and all(isinstance(v, tf.Tensor) for v in flat):
            trace = (self.function.get_concrete_function(*args), [(v.dtype, v.shape) for v in flat])  # a lookup
            self._traces = (trace, *self._traces[:MAX_TRACES - 1])


def _matches(flat: list, signature: list) -> bool:
    """Whether ``flat`` are tensors (not variables nor Python values) of the signature's dtypes and shapes."""
    if len(flat) != len(signature):
        return False
    for value, (dtype, shape) in zip(flat, signature):
        # dtypes are interned, so `is` compares them
        if not isinstance(value, tf.Tensor) or value.dtype is not dtype or value.shape != shape:
            return False
    return True
