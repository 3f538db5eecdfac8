"""The ``tf.function`` that every loop stepping environments is: run by TensorFlow's single-threaded executor.

A collection or evaluation step is a chain of small ops (the policy's layers,
one sample, the experience writes) around one ``tf.numpy_function``: nothing
in it can run in parallel, yet the default executor hands each ready op to
its inter-op thread pool, and at 8 CartPole copies the hand-offs cost about
as much as the environment. The single-threaded executor runs each graph's
ops in order on one thread, handing none over (a loop body runs where the
loop op schedules it; matmuls still use the intra-op pool): collection
at 8 copies went from 15,500 to 24,200 env steps/s, at 64 from 58,900 to
70,200 (``benchmarks/collect_throughput.py --executor both``). Graphs with
independent branches (the updates, the fused off-policy iteration) keep the
default executor: their branches do run in parallel.

That executor runs no low-level control flow (``Switch``/``Merge``), so the
function is traced with it as well: TensorFlow then keeps ``tf.while_loop``
and ``tf.cond`` as functional ops instead of lowering them. Both the trace and
every call go through :func:`stepping_function`; a function traced otherwise
would fail on its first call::

    self.run = stepping_function(self._run)   # instead of tf.function(self._run, autograph=False)
    experience, carry = self.run(carry)       # op after op, none handed to the pool

Only where the process has one device: a function spread over several
(``train.actor_device`` elsewhere than the host, a GPU, logical devices) runs
as parts that send each other tensors, and on the single-threaded executor
such a run hung (``tests/run/test_placement.py``, actors on a device of their
own). There the default executor runs it, as before.

No public API selects a function's executor: this is the one place that
reaches into TensorFlow's eager context for it.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import tensorflow as tf
from tensorflow.python.eager import context as eager_context

EXECUTOR = "SINGLE_THREADED_EXECUTOR"


def stepping_function(fn: Callable) -> Callable:
    """``tf.function(fn, autograph=False)`` traced and called on the single-threaded executor.

    The executor choice is per Python thread, so it is made at every call, on
    the calling thread (an env thread of the async pipeline, or the fault
    watch's worker thread, calls from its own thread). With more than one device the
    default executor runs it.
    """
    traced = tf.function(fn, autograph=False)

    @functools.wraps(fn)
    def call(*args: Any) -> Any:
        if not one_device():
            return traced(*args)
        with eager_context.function_executor_type(EXECUTOR):
            return traced(*args)

    call.traced = traced  # the tf.function itself, for tests and trace counts
    return call


@functools.cache
def one_device() -> bool:
    """Whether TensorFlow sees a single device (fixed once its runtime has started)."""
    return len(tf.config.list_logical_devices()) == 1
