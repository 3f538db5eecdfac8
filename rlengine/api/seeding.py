"""The run's random-number generator: every random draw of a run comes from it.

TensorFlow's global random state (``tf.random.uniform``, ``tf.random.shuffle``,
a TFP ``sample()`` without a seed) lives in op kernels and cannot be saved,
so a resumed run would draw different numbers than the run it continues.
Instead each run owns one ``tf.random.Generator`` (a variable, checkpointed
with the run) and code draws through *stateless* ops seeded from it::

    import rlengine
    noise = tf.random.stateless_normal(shape, seed=rlengine.random.seed())
    action = dist.sample(seed=rlengine.random.seed())   # TFP takes the same seeds

``seed()`` works eagerly and inside ``tf.function`` (it advances the
generator's state variable; automatic control dependencies keep the draws of
one function in program order). The engine calls :func:`reset` when a run
starts, before anything is built, so functions traced for the run capture
that run's generator. The generator is made at its first use, so a reset
runs no TensorFlow op: the engine resets before it sizes TensorFlow's
thread pools, which the first op fixes.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator, Optional

import tensorflow as tf

__all__ = ["generator", "orders", "reset", "seed", "shuffle"]

_generator: Optional[tf.random.Generator] = None
_seed = 0  # of the generator the next generator() makes
# a stand-in for one thread only (a policy tracing its LiteRT form), so a run in another thread keeps its generator
_this_thread = threading.local()


def reset(run_seed: int) -> None:
    """Give the process a fresh run generator seeded with ``run_seed`` (made at its first use)."""
    global _generator, _seed
    _generator, _seed = None, int(run_seed)


def generator() -> tf.random.Generator:
    """The current run's generator (seeded with 0 when no run set a seed)."""
    global _generator
    stand_in = getattr(_this_thread, "generator", None)
    if stand_in is not None:
        return stand_in
    if _generator is None:
        with tf.init_scope():  # a variable, created outside any function being traced
            _generator = tf.random.Generator.from_seed(_seed)
    return _generator


def seed() -> Any:
    """A fresh stateless seed: int32 ``[2]``, for ``tf.random.stateless_*`` ops and TFP ``sample(seed=)``."""
    return generator().uniform_full_int([2], tf.int32)


def shuffle(values: Any) -> Any:
    """``values`` in a random order along the first axis (a stateless ``tf.random.shuffle``)."""
    return tf.gather(values, orders(1, tf.shape(values)[0])[0])  # [1, n] keys draw what [n] did


def orders(count: int, size: Any) -> Any:
    """``count`` independent random orders of ``range(size)``: int32 ``[count, size]``, from one fresh seed."""
    keys = tf.random.stateless_uniform(tf.stack([count, size]), seed=seed())
    return tf.argsort(keys, axis=-1)


@contextlib.contextmanager
def _standing_in(stand_in: Any) -> Iterator[None]:
    """:func:`generator` is ``stand_in`` in this thread while inside (other threads keep the run's)."""
    previous = getattr(_this_thread, "generator", None)
    _this_thread.generator = stand_in
    try:
        yield
    finally:
        _this_thread.generator = previous
