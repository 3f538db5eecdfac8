"""Convolutional torsos of the image encoders, built eagerly from the image shape.

Plain ``tf.Module``s over ``tf.nn`` ops: a Keras layer costs more to build
and to trace (see ``benchmarks/encoder_cost.py``). Kernels are orthogonal
with gain sqrt(2), like the MLPs: the ``[k, k, in, out]`` kernel is an
orthogonal ``[k * k * in, out]`` matrix reshaped.
"""

from __future__ import annotations

import math

import numpy as np
import tensorflow as tf

from rlengine_algorithms.networks import Dense, orthogonal

#: (filters, kernel, stride) of the Nature DQN convolutions (Mnih et al. 2015)
NATURE_LAYERS = ((32, 8, 4), (64, 4, 2), (64, 3, 1))


class Pixels:
    """Turns a ``[B, ...]`` image leaf into ``[B, H, W, C]`` float32.

    A leaf of shape ``[C, H, W]`` with ``C <= 4`` and ``H, W > C`` is taken as
    channels-first and transposed in the graph: TensorFlow's CPU convolutions
    need channels last. uint8 pixels are scaled to [0, 1] when ``scale_uint8``.
    """

    def __init__(self, spec, scale_uint8: bool):
        self.shape = [int(d) for d in spec.shape]
        c, h, w = self.shape
        self.channels_first = c <= 4 and h > c and w > c
        self.hwc = (h, w, c) if self.channels_first else tuple(self.shape)
        self.scale = 1.0 / 255.0 if scale_uint8 and spec.dtype == tf.uint8 else None

    def __call__(self, image):
        if self.channels_first:  # transposed before the cast: a quarter of the bytes to move for uint8
            image = tf.transpose(image, [0, 2, 3, 1])
        image = tf.cast(image, tf.float32)
        return image * self.scale if self.scale is not None else image


class Conv2D(tf.Module):
    """A 2-D convolution of NHWC inputs with a bias."""

    def __init__(self, in_channels: int, filters: int, kernel: int, stride: int = 1, padding: str = "SAME",
                 name: str = "conv"):
        super().__init__(name=name)
        self.stride, self.padding = stride, padding
        matrix = orthogonal([kernel * kernel * in_channels, filters], math.sqrt(2))
        with self.name_scope:
            self.w = tf.Variable(tf.reshape(matrix, [kernel, kernel, in_channels, filters]), name="w")
            self.b = tf.Variable(tf.zeros([filters]), name="b")

    def __call__(self, x):
        return tf.nn.bias_add(tf.nn.conv2d(x, self.w, self.stride, self.padding), self.b)


def valid_size(size: int, kernel: int, stride: int) -> int:
    """Output length of a VALID convolution (< 1: the kernel does not fit)."""
    return (size - kernel) // stride + 1


def nature_fits(hwc) -> bool:
    """Whether the Nature kernels fit an image of this height and width (36x36 at least)."""
    h, w = hwc[0], hwc[1]
    for _, kernel, stride in NATURE_LAYERS:
        if h < kernel or w < kernel:
            return False
        h, w = valid_size(h, kernel, stride), valid_size(w, kernel, stride)
    return True


class DenseHead(tf.Module):
    """Flatten ``[B, H, W, C]``, then a dense ReLU layer of ``features``."""

    def __init__(self, hwc, features: int, name: str = "head"):
        super().__init__(name=name)
        self.flat = int(np.prod(hwc))
        with self.name_scope:
            self.dense = Dense(features, math.sqrt(2), tf.nn.relu, name="dense", in_size=self.flat)

    def __call__(self, x):
        return self.dense(tf.reshape(x, [-1, self.flat]))


class NatureTorso(tf.Module):
    """Conv 32 8x8/4, 64 4x4/2, 64 3x3/1, each ReLU, VALID padding; then the dense head."""

    def __init__(self, hwc, features: int, name: str = "nature_cnn"):
        super().__init__(name=name)
        h, w, channels = hwc
        self.convs = []
        with self.name_scope:
            for i, (filters, kernel, stride) in enumerate(NATURE_LAYERS):
                self.convs.append(Conv2D(channels, filters, kernel, stride, "VALID", name=f"conv_{i}"))
                h, w, channels = valid_size(h, kernel, stride), valid_size(w, kernel, stride), filters
            self.head = DenseHead((h, w, channels), features)

    def __call__(self, x):
        for conv in self.convs:
            x = tf.nn.relu(conv(x))
        return self.head(x)


class SmallConvTorso(tf.Module):
    """Conv 16 3x3/1 and 32 3x3/2, each ReLU, SAME padding; then the dense head. For images too small
    for the Nature kernels."""

    def __init__(self, hwc, features: int, name: str = "small_cnn"):
        super().__init__(name=name)
        h, w, channels = hwc
        with self.name_scope:
            self.convs = [Conv2D(channels, 16, 3, 1, name="conv_0"), Conv2D(16, 32, 3, 2, name="conv_1")]
            self.head = DenseHead((math.ceil(h / 2), math.ceil(w / 2), 32), features)

    def __call__(self, x):
        for conv in self.convs:
            x = tf.nn.relu(conv(x))
        return self.head(x)


class ResidualBlock(tf.Module):
    """``x + conv(relu(conv(relu(x))))``, both convolutions 3x3 SAME."""

    def __init__(self, channels: int, name: str):
        super().__init__(name=name)
        with self.name_scope:
            self.conv0 = Conv2D(channels, channels, 3, name="conv_0")
            self.conv1 = Conv2D(channels, channels, 3, name="conv_1")

    def __call__(self, x):
        return x + self.conv1(tf.nn.relu(self.conv0(tf.nn.relu(x))))


class ImpalaStack(tf.Module):
    """Conv 3x3, max-pool 3x3 stride 2 (SAME: halves the size, rounding up), two residual blocks."""

    def __init__(self, in_channels: int, channels: int, name: str):
        super().__init__(name=name)
        with self.name_scope:
            self.conv = Conv2D(in_channels, channels, 3, name="conv")
            self.blocks = [ResidualBlock(channels, "block_0"), ResidualBlock(channels, "block_1")]

    def __call__(self, x):
        x = tf.nn.max_pool2d(self.conv(x), ksize=3, strides=2, padding="SAME")
        for block in self.blocks:
            x = block(x)
        return x


class ImpalaTorso(tf.Module):
    """The IMPALA stacks, then ReLU and the dense head (Espeholt et al. 2018)."""

    def __init__(self, hwc, channels, features: int, name: str = "impala_cnn"):
        super().__init__(name=name)
        h, w, in_channels = hwc
        self.stacks = []
        with self.name_scope:
            for i, out_channels in enumerate(channels):
                self.stacks.append(ImpalaStack(in_channels, out_channels, f"stack_{i}"))
                h, w, in_channels = math.ceil(h / 2), math.ceil(w / 2), out_channels
            self.head = DenseHead((h, w, in_channels), features)

    def __call__(self, x):
        for stack in self.stacks:
            x = stack(x)
        return self.head(tf.nn.relu(x))
