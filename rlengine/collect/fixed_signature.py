"""A ``tf.function`` called with one signature for a whole run, without matching its arguments at every call.

Before a ``tf.function`` runs its graph, Python matches the arguments against
its traces: a trace type for every nested value, hashed and compared. For the
collector's carry (nine arrays in named tuples) that took more than a SAC
update: an unroll of one step took 1.7x as long through the ``tf.function``
as through the concrete function of its trace (docs/performance.md).

The engine's hot functions (the collector's unroll, the learner's update, the
off-policy iteration) take arguments of one structure, dtypes and shapes all
run long. So after the first call, which traces, this calls the concrete
function of that trace with the flat arrays, once each array's dtype and shape
are checked against the first call's. Anything else (another shape, a Python
value, a variable, keywords, a call inside a graph, ``--eager`` debugging)
goes through the ``tf.function``, which traces again if it must; the first few
traces called with tensors are kept::

    self.run = FixedSignatureFunction(self._run)   # instead of tf.function(self._run, autograph=False)
    experience, carry = self.run(carry)            # the first call traces; later calls run the trace

Only the arrays are checked, not what else ``tf.function`` keys its traces
on: the arguments' nesting and the call's context (its device scope) must
stay the same between calls. They do for these callers, whose arguments are
the previous call's outputs or come from the run's specs, and which are
called from one place each.
"""

from __future__ import annotations

from typing import Any, Callable

import tensorflow as tf

#: traces kept for the fast call (the async learner's unrolls may alternate between batch sizes); signatures
#: after these go through the tf.function's own matching, as without this class
MAX_TRACES = 4


class FixedSignatureFunction:
    """``tf.function(fn, autograph=False)``, whose calls after the first skip the per-call matching."""

    def __init__(self, fn: Callable):
        self.function = tf.function(fn, autograph=False)  # the tf.function, for tests and trace counts
        # the first MAX_TRACES traces called, each as (concrete function, (dtype, shape) or None for each
        # flat argument); a tuple replaced whole, so that another thread never sees a function with another's
        # signature
        self._traces: tuple = ()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs or tf.config.functions_run_eagerly():  # keywords, or `--eager` debugging: as called
            return self.function(*args, **kwargs)
        flat = tf.nest.flatten(args)
        eager = tf.executing_eagerly()
        if eager:
            for concrete, signature in self._traces:
                if _matches(flat, signature):
                    # the concrete function's own call would match the structure again: its flat call does
                    # not (its inputs are the tensors: None leaves are no inputs)
                    return concrete._call_flat([v for v in flat if v is not None], concrete.captured_inputs)
        result = self.function(*args)
        if eager and len(self._traces) < MAX_TRACES:
            self._remember(args, flat)
        return result

    def __getattr__(self, name: str) -> Any:  # the rest of the tf.function's API (get_concrete_function, ...)
        if name == "function":  # not set yet (a copy being made): no recursion through this method
            raise AttributeError(name)
        return getattr(self.function, name)

    def _remember(self, args: tuple, flat: list) -> None:
        """Keep the trace an eager call with tensors (or None) only just ran."""
        if all(v is None or isinstance(v, tf.Tensor) for v in flat):
            signature = [None if v is None else (v.dtype, v.shape) for v in flat]
            self._traces = (*self._traces, (self.function.get_concrete_function(*args), signature))  # a lookup


def _matches(flat: list, signature: list) -> bool:
    """Whether ``flat`` are tensors (not variables nor Python values) of the signature's dtypes and shapes,
    and None where it has None."""
    if len(flat) != len(signature):
        return False
    for value, expected in zip(flat, signature):
        if expected is None:
            if value is not None:
                return False
        # dtypes are interned, so `is` compares them
        elif not isinstance(value, tf.Tensor) or value.dtype is not expected[0] or value.shape != expected[1]:
            return False
    return True
