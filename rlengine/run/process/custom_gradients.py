"""The custom gradients a run's graphs registered in TensorFlow, unregistered when the run ends.

A ``tf.custom_gradient`` traced into a graph registers its gradient function in TensorFlow's
process-wide gradient registry, under a name of its own (``CustomGradient-<uid>``), and nothing in
TensorFlow ever removes it. The function's closure holds tensors of the graph it was traced in, so
the registration keeps that graph alive for good, with the graphs of its loops and branches and the
functions they registered on the eager context. Keras optimizers trace one in every
``apply_gradients`` (the all-reduce of the gradients across replicas, an identity without a
distribution strategy), so each run left its update graph behind: a process training run after run
(``rlengine tune``, the tests) grew by it every run (``benchmarks/memory_runs.py``).

A name is looked up only to build the gradient of a graph that holds its op, while a function
tracing through it is traced; once the run ended, none of its graphs is traced again. Runs train one
at a time in a process (``tf.config.run_functions_eagerly``, the signal handlers and op determinism
are process-wide as well), so the names registered while one trained are that run's.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

from tensorflow.python.framework import ops

#: the prefix of the names ``tf.custom_gradient`` registers in graph mode (one per traced call)
CUSTOM_GRADIENT_PREFIX = "CustomGradient-"


def custom_gradient_names() -> set[str]:
    """The names of the custom gradients registered in this process (TensorFlow's private registry)."""
    return {name for name in list(ops._gradient_registry._registry) if name.startswith(CUSTOM_GRADIENT_PREFIX)}


@contextlib.contextmanager
def custom_gradients_released() -> Iterator[None]:
    """Unregister, on exit however the block ends, the custom gradients registered inside it.

    Gradients registered by name (``tf.RegisterGradient("MyOp")``, e.g. by a plugin imported during
    the run) stay: only the per-call ``CustomGradient-`` names are the run's.
    """
    before = custom_gradient_names()
    try:
        yield
    finally:
        registry = ops._gradient_registry._registry
        for name in custom_gradient_names() - before:
            registry.pop(name, None)
