"""What one ``tf.numpy_function`` call costs inside a graph loop, with and without a kept thread state.

A graph runs a ``tf.while_loop`` of ``--calls`` iterations, each calling a Python function that
returns at once (the cost of reaching Python, not of any work there):

* ``fresh``: the callback as TensorFlow runs it by default, in a Python thread state it builds and
  frees around every call;
* ``kept``: the callback calls :func:`rlengine.collect.python_thread.keep_thread_state` first, as
  ``EnvCaller`` does, so each TensorFlow thread keeps its state.

All ``fresh`` rounds run before the first ``kept`` one: once a thread has kept its state, every
later callback on it finds that state. Prints the median microseconds per call of each.

    python benchmarks/numpy_function_call.py [--calls 20000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import tensorflow as tf

from rlengine.collect.python_thread import keep_thread_state


def loop_of_calls(callback, calls: int):
    @tf.function(autograph=False)
    def run():
        def body(i):
            with tf.control_dependencies([tf.numpy_function(callback, [], tf.int32, stateful=True)]):
                return (i + 1,)

        return tf.while_loop(lambda i: i < calls, body, (tf.constant(0),), parallel_iterations=1)

    return run


def fresh() -> np.int32:
    return np.int32(0)


def kept() -> np.int32:
    keep_thread_state()
    return np.int32(0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    tf.config.threading.set_intra_op_parallelism_threads(1)  # as train.intra_op_threads = "auto" for vectors
    medians = {}
    for name, callback in (("fresh", fresh), ("kept", kept)):
        run = loop_of_calls(callback, args.calls)
        run()  # trace
        times = []
        for _ in range(args.rounds):
            start = time.perf_counter()
            run()
            times.append((time.perf_counter() - start) / args.calls * 1e6)
        medians[name] = statistics.median(times)
        print(f"{name:<6} {medians[name]:6.1f} us per call (median of {args.rounds} loops of {args.calls:,})")
    print(f"kept / fresh: {medians['kept'] / medians['fresh']:.2f}")


if __name__ == "__main__":
    main()
