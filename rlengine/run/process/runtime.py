"""TensorFlow's runtime, sized for the run before its first op.

Two pools, each fixed once the runtime starts (its first op):

* the inter-op pool runs independent ops at once. A pipeline whose threads
  step environments inside graphs (``tf.numpy_function``) holds a thread of
  it per stepping thread, so it asks for a pool that large
  (``Pipeline.runtime_threads``). A pool larger than the cores, though, slows
  the synchronous learner (its independent ops then contend for the cores),
  so the pool is not grown for runs that do not need it.
* the intra-op pool splits one op over threads. For the small matmuls of
  MLP-sized networks the split costs more than it saves: with one thread,
  PPO CartPole's update took 0.96x, SAC Pendulum's 0.81x and DQN CartPole's
  0.72x the time, while a Nature-CNN gradient on 256 frames took 1.19x
  (``benchmarks/intra_op_threads.py``; ``train.intra_op_threads``,
  docs/configuration.md#threads).

Graph functions are optimized (Grappler) once, at their first call, in one
pass of the optimizers instead of TensorFlow's two: in the engine's graphs the
second pass removed at most a few duplicate scalar ops (13 of PPO's ~1,000
nodes; iteration times unchanged) and cost a fifth of the update's first call.

The engine checks the settings before anything is written, then starts the
runtime once the environments (which say whether observations are images)
exist::

    prepare_runtime(needed_threads, pipeline_name)        # sizes the inter-op pool; runs no op
    start_runtime(train.intra_op_threads, observation_spec)   # the first op of the process
"""

from __future__ import annotations

import os
import sys
from typing import Any

from rlengine.errors import ConfigError
from rlengine.quiet_tensorflow import quiet_stderr

#: ``train.intra_op_threads`` that picks by the observations (see :func:`intra_op_threads_for`)
AUTO = "auto"
_warmed_up = False


def inter_op_threads() -> int:
    """Threads of TensorFlow's inter-op pool (as configured, else its default: one per core)."""
    import tensorflow as tf

    return _pool_size(tf.config.threading.get_inter_op_parallelism_threads(), "TF_NUM_INTEROP_THREADS")


def intra_op_threads() -> int:
    """Threads of TensorFlow's intra-op pool (as configured, else its default: one per core)."""
    import tensorflow as tf

    return _pool_size(tf.config.threading.get_intra_op_parallelism_threads(), "TF_NUM_INTRAOP_THREADS")


def _pool_size(configured: int, variable: str) -> int:
    """A pool's threads: as configured, else as the environment ``variable`` says, else one per core."""
    return configured or int(os.environ.get(variable) or 0) or (os.cpu_count() or 1)


def prepare_runtime(needed_threads: int = 0, pipeline: str = "") -> None:
    """Grow the inter-op pool to ``needed_threads`` if the runtime has not started; runs no op.

    Raises ConfigError when the runtime already started with a smaller pool.
    """
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


def intra_op_threads_for(setting: int | str, observation_spec: Any) -> int:
    """The intra-op pool ``train.intra_op_threads`` asks for; 0: TensorFlow's choice.

    ``"auto"`` is one thread when every observation is a vector (or scalar), which
    the small networks these feed do not split profitably (one is also within any
    share of the cores ``TF_NUM_INTRAOP_THREADS`` gives a process), and TensorFlow's
    choice (``TF_NUM_INTRAOP_THREADS`` if set, else one per core) when any is an
    image or other array of rank 2 or more, whose convolutions do.
    """
    import tensorflow as tf

    if setting != AUTO:
        return int(setting)
    ranks = [len(spec.shape) for spec in tf.nest.flatten(observation_spec)]
    return 0 if any(rank >= 2 for rank in ranks) else 1


def start_runtime(intra_op_setting: int | str = 0, observation_spec: Any = ()) -> None:
    """Size the intra-op pool (unless the runtime started already), then run the first op.

    A runtime started before the run was built (the caller's own ops) keeps its
    pool: ``"auto"`` then leaves it, and a number that differs is said in one
    warning, since only the speed depends on it.
    """
    import tensorflow as tf

    threads = intra_op_threads_for(intra_op_setting, observation_spec)
    if threads and threads != intra_op_threads():
        try:
            tf.config.threading.set_intra_op_parallelism_threads(threads)
        except RuntimeError:  # TensorFlow ran an op already: the pool is fixed
            if intra_op_setting != AUTO:
                print(f"warning: train.intra_op_threads = {threads} is not applied: TensorFlow's runtime started "
                      f"before the run was built; set TF_NUM_INTRAOP_THREADS={threads} before starting Python, or "
                      "build the Engine before running any TensorFlow op", file=sys.stderr)
    lighter_graph_optimization()
    warm_up()


def lighter_graph_optimization() -> None:
    """Have Grappler run its optimizers over each function once (TensorFlow's default: twice), and
    without the GPU-only ones (layout, memory) when there is no GPU.

    Every function pays these passes when first called: the two GPU-only ones
    took a fifth of the time spent optimizing PPO's update, and changed nothing
    on a CPU (``benchmarks/startup.py`` times a run's start). For the whole
    process, as the pools are. The setting rides on a copy of the runtime's base config, which each thread reads at its first function call;
    the calling thread's cached copy is dropped (another thread that already
    called a function keeps TensorFlow's defaults).
    """
    import tensorflow as tf
    from tensorflow.core.protobuf import config_pb2, rewriter_config_pb2
    from tensorflow.python.eager import context

    runtime = context.context()
    config = config_pb2.ConfigProto()
    if runtime._config is not None:  # a config given when the runtime was made: kept, not edited in place
        config.CopyFrom(runtime._config)
    rewrites = config.graph_options.rewrite_options
    rewrites.meta_optimizer_iterations = rewriter_config_pb2.RewriterConfig.ONE
    if not tf.config.list_physical_devices("GPU"):  # NHWC/NCHW choice and host-memory swapping are for GPUs
        rewrites.layout_optimizer = rewriter_config_pb2.RewriterConfig.OFF
        rewrites.memory_optimization = rewriter_config_pb2.RewriterConfig.NO_MEM_OPT
    runtime._config = config
    runtime.function_call_options = None


def warm_up() -> None:
    """Run, once per process and silenced, the first ops that make TensorFlow's C++ runtime print one-time
    notices (oneDNN's on int32 sampling): a run calls it when it starts the runtime, ``rlengine.load`` too."""
    global _warmed_up
    import tensorflow as tf

    if not _warmed_up:
        _warmed_up = True
        import tensorflow_probability as tfp

        with quiet_stderr():  # one-time C++ notices on first use (e.g. oneDNN's on int32 sampling)
            # seeded (stateless), as the engine samples: an unseeded draw takes an op seed from the global
            # seed's sequence, so the first run in a process would initialise its networks unlike the next
            tfp.distributions.Categorical(logits=tf.zeros([1, 2]), dtype=tf.int32).sample(seed=tf.constant([0, 0]))
