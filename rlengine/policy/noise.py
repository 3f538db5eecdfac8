"""The sampling step with its randomness as an input, so it converts to a LiteRT model.

Every random draw of rlengine goes through a stateless op seeded from the
run's generator (:mod:`rlengine.api.seeding`); LiteRT has neither those ops
nor the generator. While :func:`noise_fed` traces a step, the stateless
uniform, normal and categorical draws of ``tf.random`` (which TensorFlow
Probability's samplers call too) read uniform draws from a 1-D input
instead, consumed in the order the step draws:

* uniform: ``minval + u (maxval - minval)`` (integers: its floor);
* normal: Box-Muller, two uniforms a value;
* categorical: the Gumbel-max trick, ``argmax(logits - log(-log u))``.

The policy feeds that input from a NumPy generator seeded with its seed. A
step drawing any other way (another stateless op, a stateful one) does not
convert, and sampling stays on TensorFlow.
"""

from __future__ import annotations

import contextlib
import math
import threading
from typing import Any, Iterator

import tensorflow as tf
import tensorflow.compat.v2 as tf_v2

from rlengine.api import seeding

_PATCHED = ("stateless_uniform", "stateless_normal", "stateless_categorical")
_patch_lock = threading.Lock()


class NoiseReader:
    """Hands out consecutive slices of a 1-D float32 tensor of uniform draws; ``used`` counts them."""

    def __init__(self, noise: tf.Tensor):
        self.noise = noise
        self.used = tf.constant(0, tf.int32)

    def take(self, shape: Any) -> tf.Tensor:
        shape = tf.cast(shape, tf.int32)
        size = tf.reduce_prod(shape)
        values = tf.slice(self.noise, tf.reshape(self.used, [1]), tf.reshape(size, [1]))
        self.used = self.used + size
        return tf.reshape(values, shape)

    def uniform(self, shape, seed=None, minval=0, maxval=None, dtype=tf.float32, name=None, alg=None):
        dtype = tf.as_dtype(dtype)
        if maxval is None:
            if dtype.is_integer:
                raise NotImplementedError("a full-range integer draw has no noise-fed form")
            maxval = 1
        u = self.take(shape)
        if dtype.is_integer:
            low, high = tf.cast(minval, tf.float32), tf.cast(maxval, tf.float32)
            value = tf.minimum(tf.floor(low + u * (high - low)), high - 1.0)
            return tf.cast(value, dtype)
        return tf.cast(minval, dtype) + tf.cast(u, dtype) * (tf.cast(maxval, dtype) - tf.cast(minval, dtype))

    def normal(self, shape, seed=None, mean=0.0, stddev=1.0, dtype=tf.float32, name=None, alg=None):
        dtype = tf.as_dtype(dtype)
        radius = tf.sqrt(-2.0 * tf.math.log(1.0 - self.take(shape)))  # 1 - u is in (0, 1]
        z = radius * tf.cos(2.0 * math.pi * self.take(shape))
        return tf.cast(mean, dtype) + tf.cast(stddev, dtype) * tf.cast(z, dtype)

    def categorical(self, logits, num_samples, seed=None, dtype=tf.int64, name=None):
        logits = tf.convert_to_tensor(logits)
        shape = tf.shape(logits)
        u = self.take(tf.stack([shape[0], num_samples, shape[1]]))
        gumbel = -tf.math.log(-tf.math.log(tf.maximum(u, 1e-30)))
        return tf.argmax(tf.cast(logits, tf.float32)[:, None, :] + gumbel, axis=-1, output_type=tf.as_dtype(dtype))


class _ConstantSeeds:
    """Stands in for the run's generator while tracing: the seeds feed no op once the draws read noise."""

    def uniform_full_int(self, shape, dtype=tf.int32):
        return tf.zeros(shape, dtype)


@contextlib.contextmanager
def noise_fed(reader: NoiseReader) -> Iterator[None]:
    """Trace with ``tf.random``'s stateless draws reading ``reader`` (in this thread only)."""
    tracing = threading.get_ident()
    modules = {id(m): m for m in (tf.random, tf_v2.random)}.values()
    with _patch_lock:
        saved = [(m, name, getattr(m, name)) for m in modules for name in _PATCHED]
        replacements = dict(zip(_PATCHED, (reader.uniform, reader.normal, reader.categorical)))
        for module, name, original in saved:
            setattr(module, name, _in_thread(tracing, replacements[name], original))
        try:
            with seeding._standing_in(_ConstantSeeds()):
                yield
        finally:
            for module, name, original in saved:
                setattr(module, name, original)


def _in_thread(thread: int, replacement: Any, original: Any) -> Any:
    """``replacement`` in the tracing thread, ``original`` in any other (a training run tracing meanwhile)."""

    def draw(*args, **kwargs):
        return (replacement if threading.get_ident() == thread else original)(*args, **kwargs)

    return draw
