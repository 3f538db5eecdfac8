"""The ``tf.function`` of the synchronous collector and of the evaluator: run by TensorFlow's single-threaded executor.

A collection or evaluation step is a chain of small ops (the policy's layers,
one sample, the experience writes) around one ``tf.numpy_function``: nothing
in it can run in parallel, yet the default executor hands ready ops to its
inter-op thread pool, so the environment's Python runs on whichever pool
thread took the step. The single-threaded executor runs each graph's ops in
order on one thread (matmuls still use the intra-op pool): collection
at 8 CartPole copies 1.4-1.6x as fast, evaluation 1.3-2x
(``benchmarks/stepping_executor.py``). Graphs with independent branches (the
updates, the fused off-policy iteration) keep the default executor, and so do
the async pipeline's env threads: there it made async SAC 1.5x slower.

That executor runs no low-level control flow (``Switch``/``Merge``), so the
function is traced with it as well: TensorFlow then keeps ``tf.while_loop``
and ``tf.cond`` as functional ops instead of lowering them::

    self.run = SteppingFunction(self._run, stepper)   # instead of tf.function(self._run, autograph=False)
    experience, carry = self.run(carry)                  # op after op, none handed to the pool

**Where an error began.** Inside an unlowered loop body a failing op's error
loses its definition, so it cannot say which line of the algorithm defined
the op, and the run's one-line error must name it. Such an error, of a kind
that repeats with the same inputs (:data:`RERUN_ERRORS`: a failed assert, a
bad shape or index) and not the environment's own (which its caller
reports), makes the function run once more on the default executor with the
same inputs: that error says where the op was defined and is the one raised.
The rerun steps the environment again and may update observation statistics;
the run is stopping, and a graph error mid-iteration saves no checkpoint. No
rerun happens once a stop is requested or the environment has failed, and an
environment error during the rerun is put back as it was, so the first error
is reported as it came.

**Only loops that step a Python environment.** On this executor a ``tf.while_loop``
of only graph ops overflowed the thread's stack after about 2,000 iterations
(TensorFlow 2.21: the process died of a segmentation fault), while loops
whose body calls a ``numpy_function`` ran 20,000
(``tests/collect/test_stepping_function.py``). So a function that steps a graph
environment (its stepper does not call Python), like the updates' loops, runs
on the default executor.

Only where the process has one device: a function spread over several
(``train.actor_device`` elsewhere than the host, a GPU, logical devices) runs
as parts that send each other tensors, and on the single-threaded executor
such a run hung (``tests/run/test_placement.py``). There the default executor
runs it. No public API selects a function's executor: this is the one place
that reaches into TensorFlow's eager context for it.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import tensorflow as tf
from tensorflow.python.eager import context as eager_context

from rlengine.collect import stopping
from rlengine.collect.fixed_signature import FixedSignatureFunction
from rlengine.collect.stepper import Stepper

EXECUTOR = "SINGLE_THREADED_EXECUTOR"
#: what TensorFlow's errors on the default executor say and the single-threaded one's lose
LOCATED = "defined at (most recent call last)"
#: graph errors the same inputs raise again (not, e.g., running out of memory or a cancelled call)
RERUN_ERRORS = (tf.errors.InvalidArgumentError, tf.errors.OutOfRangeError, tf.errors.FailedPreconditionError,
                tf.errors.UnimplementedError)


class SteppingFunction:
    """``tf.function(fn, autograph=False)`` traced and called on the single-threaded executor (through
    :class:`FixedSignatureFunction`).

    The executor choice is per Python thread, so it is made at every call, on
    the calling thread (the fault watch's worker thread calls from its own).
    ``caller`` is the stepper of the environment the function steps: an error it
    recorded is the environment's, not the graph's, and is never rerun.
    """

    def __init__(self, fn: Callable, caller: Stepper):
        self.fn = fn
        self.caller = caller
        self.call = FixedSignatureFunction(fn)
        self.function = self.call.function  # the tf.function itself, for tests and trace counts

    def __call__(self, *args: Any) -> Any:
        if not (self.caller.calls_python and one_device()):
            return self.call(*args)
        env_error = self.caller.error
        try:
            with eager_context.function_executor_type(EXECUTOR):
                return self.call(*args)
        except tf.errors.OpError as error:
            if self._may_rerun(error, env_error):
                self._raise_located(args, error)
            raise

    def _may_rerun(self, error: tf.errors.OpError, env_error: Any) -> bool:
        """Whether ``error`` is the graph's, lacks its location, would come again and may be rerun at all."""
        return (isinstance(error, RERUN_ERRORS) and LOCATED not in str(error) and self.caller.error is env_error
                and stopping.requested() is None and getattr(self.caller.env, "failure", None) is None)

    def _raise_located(self, args: tuple, error: tf.errors.OpError) -> None:
        """Run ``fn`` on the default executor with the same inputs and raise its graph error, if it has one."""
        env_error = self.caller.error
        try:
            tf.function(self.fn, autograph=False)(*args)
        except tf.errors.OpError as located:
            if self.caller.error is env_error and LOCATED in str(located):
                raise located from error
        except Exception:  # the rerun failed otherwise: the first error stands
            pass
        finally:  # an environment error of the rerun must not stand for the first error
            self.caller.error = env_error
            env: Any = self.caller.env  # a guarded Python environment records its failure there
            if getattr(env, "failure", None) is not None:
                env.failure = None


@functools.cache
def one_device() -> bool:
    """Whether TensorFlow sees a single device: fixed once its runtime has started, which a run does when it
    is built (``start_runtime``), before any of its functions is called."""
    return len(tf.config.list_logical_devices()) == 1
