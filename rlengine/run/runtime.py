"""TensorFlow's runtime, sized for the run before its first op.

A pipeline whose threads step environments inside graphs
(``tf.numpy_function``) holds a thread of TensorFlow's inter-op pool per
stepping thread, so it asks for a pool that large
(``Pipeline.runtime_threads``). A pool larger than the cores, though, slows
the synchronous learner (its independent ops then contend for the cores), so
the pool is not grown for runs that do not need it. It can only be sized
before the runtime starts, so the engine sizes it when a run is built::

    prepare_runtime(needed_threads, pipeline_name)   # before the first op of the process
"""

from __future__ import annotations

import os

from rlengine.errors import ConfigError
from rlengine.quiet_tensorflow import quiet_stderr

_warmed_up = False


def inter_op_threads() -> int:
    """Threads of TensorFlow's inter-op pool (as configured, else its default: one per core)."""
    import tensorflow as tf

    configured = tf.config.threading.get_inter_op_parallelism_threads()
    return configured or int(os.environ.get("TF_NUM_INTEROP_THREADS") or 0) or (os.cpu_count() or 1)


def prepare_runtime(needed_threads: int = 0, pipeline: str = "") -> None:
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
                f"pipeline {pipeline!r} needs {needed_threads} threads in TensorFlow's inter-op pool, which has "
                f"{inter_op_threads()} and started before the run was built (TensorFlow ran an op first); set "
                f"TF_NUM_INTEROP_THREADS={needed_threads} (or more) in the environment before starting Python, "
                "or build the Engine before running any TensorFlow op") from None
    if not _warmed_up:
        _warmed_up = True
        import tensorflow_probability as tfp

        with quiet_stderr():  # one-time C++ notices on first use (e.g. oneDNN's on int32 sampling)
            tfp.distributions.Categorical(logits=tf.zeros([1, 2]), dtype=tf.int32).sample()
