"""TensorFlow's runtime, sized for the run before its first op.

The async driver's env threads each step their environment inside a graph
(``tf.numpy_function``), on a thread of TensorFlow's inter-op pool, so the
pool needs a thread per env thread (and one more). A larger pool than the
cores, though, slows the synchronous learner (its independent ops then
contend for two cores: 31 ms per PPO iteration with 16 threads against 16 ms
with 2 here). The pool can only be sized before the runtime starts, so the
engine sizes it when a run is built, for that run's driver::

    prepare_runtime(needed_threads)   # before the first op of the process
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Iterator

from rlengine.errors import ConfigError

_warmed_up = False


@contextlib.contextmanager
def quiet_stderr() -> Iterator[None]:
    """Send fd 2 to /dev/null: TensorFlow's C++ start-up messages are written there
    before any logging is set up, so no setting silences them. ``RLENGINE_DEBUG=1`` keeps them."""
    if os.environ.get("RLENGINE_DEBUG"):
        yield
        return
    saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    try:
        sys.stderr.flush()
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def inter_op_threads() -> int:
    """Threads of TensorFlow's inter-op pool (as configured, else its default: one per core)."""
    import tensorflow as tf

    configured = tf.config.threading.get_inter_op_parallelism_threads()
    return configured or int(os.environ.get("TF_NUM_INTEROP_THREADS") or 0) or (os.cpu_count() or 1)


def prepare_runtime(needed_threads: int = 0) -> None:
    """Grow the inter-op pool to ``needed_threads`` if the runtime has not started, then warm it up.

    Raises ConfigError when the runtime already started with a smaller pool.
    """
    global _warmed_up
    import tensorflow as tf

    if needed_threads > inter_op_threads():
        try:
            tf.config.threading.set_inter_op_parallelism_threads(needed_threads)
        except RuntimeError:  # TensorFlow ran an op already: the pool is fixed
            raise ConfigError(
                f"the async driver needs {needed_threads} threads in TensorFlow's inter-op pool, which has "
                f"{inter_op_threads()} and started before the run was built (TensorFlow ran an op first); set "
                f"TF_NUM_INTEROP_THREADS={needed_threads} (or more) in the environment before starting Python, "
                "or build the Engine before running any TensorFlow op") from None
    if not _warmed_up:
        _warmed_up = True
        import tensorflow_probability as tfp

        with quiet_stderr():  # one-time C++ notices on first use (e.g. oneDNN's on int32 sampling)
            tfp.distributions.Categorical(logits=tf.zeros([1, 2]), dtype=tf.int32).sample()
