"""Stateless random numbers with one key per environment copy: Threefry-2x32 in TensorFlow ops.

TensorFlow's stateless ops (``tf.random.stateless_uniform``) take one seed per call, so a batch
whose copies each carry their own key cannot draw from them in one vectorised op (``pfor`` falls
back to a sequential loop). Threefry-2x32 (20 rounds; Salmon et al., "Parallel random numbers:
as easy as 1, 2, 3", SC 2011; the generator behind ``jax.random``) is a counter-based generator
made of 32-bit additions, rotations and xors: it runs elementwise on ``[B, ...]`` keys, inside
``tf.function``, ``tf.while_loop`` and under XLA, and gives the same bits everywhere.

A key is an ``int32 [..., 2]`` tensor (the shape of a TensorFlow stateless seed), so a state
holding keys checkpoints like any other int32 tensor; the bits are computed as ``uint32``.
"""

from __future__ import annotations

import tensorflow as tf

__all__ = ["copy_keys", "split_and_uniform", "threefry2x32"]

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = 0x1BD11BDA  # Threefry's key-schedule constant


def _rotate_left(x: tf.Tensor, r: int) -> tf.Tensor:
    return tf.bitwise.bitwise_or(tf.bitwise.left_shift(x, tf.constant(r, tf.uint32)),
                                 tf.bitwise.right_shift(x, tf.constant(32 - r, tf.uint32)))


def threefry2x32(key: tuple, counter: tuple) -> tuple:
    """Threefry-2x32-20 of ``counter`` under ``key``: two ``uint32`` words in, two out.

    ``key`` and ``counter`` are pairs of ``uint32`` tensors that broadcast together.
    """
    k0, k1 = key
    ks = (k0, k1, tf.bitwise.bitwise_xor(tf.bitwise.bitwise_xor(k0, k1), tf.constant(_PARITY, tf.uint32)))
    x0, x1 = counter[0] + ks[0], counter[1] + ks[1]
    for group in range(5):  # 5 x 4 rounds, a key injection after each group of 4
        for r in _ROTATIONS[group % 2]:
            x0 = x0 + x1
            x1 = tf.bitwise.bitwise_xor(_rotate_left(x1, r), x0)
        x0 = x0 + ks[(group + 1) % 3]
        x1 = x1 + ks[(group + 2) % 3] + tf.constant(group + 1, tf.uint32)
    return x0, x1


def _words(key: tf.Tensor) -> tuple:
    bits = tf.bitcast(key, tf.uint32)
    return bits[..., 0], bits[..., 1]


def copy_keys(seed: tf.Tensor, env_ids: tf.Tensor) -> tf.Tensor:
    """``int32 [B, 2]``: the key of each copy, from the run's ``int32 [2]`` seed and the copies' ids.

    A copy's key depends on its ``env_id`` alone, not on how many copies share its batch, so copy
    7 plays the same episodes whether it runs in one batch of 16 or in a second batch of 8.
    """
    seed_words = _words(tf.cast(seed, tf.int32))
    ids = tf.bitcast(tf.cast(env_ids, tf.int32), tf.uint32)
    x0, x1 = threefry2x32(seed_words, (ids, tf.zeros_like(ids)))
    return tf.bitcast(tf.stack([x0, x1], axis=-1), tf.int32)


def split_and_uniform(keys: tf.Tensor, count: int) -> tuple:
    """``(next_keys, uniform)``: each copy's next key and ``count`` float64 draws in ``[0, 1)``.

    ``keys`` is ``int32 [B, 2]``; ``uniform`` is ``float64 [B, count]`` with 53 random bits per draw,
    as numpy's ``Generator.random`` has. Counter 0 makes the next key, counters 1..count the draws:
    one Threefry call over ``[B, count + 1]``.
    """
    k0, k1 = _words(keys)
    counter = tf.constant([list(range(count + 1))], tf.uint32)
    x0, x1 = threefry2x32((k0[:, tf.newaxis], k1[:, tf.newaxis]), (counter, tf.zeros_like(counter)))
    next_keys = tf.bitcast(tf.stack([x0[:, 0], x1[:, 0]], axis=-1), tf.int32)
    high = tf.cast(tf.bitwise.right_shift(x0[:, 1:], tf.constant(11, tf.uint32)), tf.float64)  # 21 bits
    low = tf.cast(x1[:, 1:], tf.float64)  # 32 bits
    uniform = (high * 4294967296.0 + low) * (1.0 / 9007199254740992.0)  # exact: 53 bits times 2**-53
    return next_keys, uniform
