"""Cost of the ``nature_cnn`` encoder as a plain ``tf.Module`` and as the same network in tf_keras layers.

Prints, for each on a ``[8, 84, 84, 4]`` uint8 batch (median of ``--trials``):

* build: constructing the network and creating its variables (Keras builds
  on its first call, so its build is that call, eagerly);
* trace: the first call of a fresh ``tf.function`` (tracing and graph setup);
* forward: seconds per call of the traced forward pass;
* gradient: seconds per call of a traced forward and backward pass.

Both networks have the same layers, init and ops (uint8 scaled by 1/255,
NHWC, VALID convolutions). Run it on a quiet machine::

    python benchmarks/encoder_cost.py [--calls 200] [--trials 3]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import numpy as np
import tensorflow as tf
import tf_keras
from rlengine_algorithms.encoders import NatureCNN

SHAPE = [84, 84, 4]


def keras_nature_cnn() -> tf_keras.Model:
    def init():  # one initializer per layer: a reused unseeded one gives every layer the same values
        return tf_keras.initializers.Orthogonal(gain=math.sqrt(2))

    def conv(filters, kernel, stride):
        return tf_keras.layers.Conv2D(filters, kernel, stride, padding="valid", activation="relu",
                                      kernel_initializer=init())

    return tf_keras.Sequential([
        tf_keras.layers.Rescaling(1.0 / 255.0),
        conv(32, 8, 4), conv(64, 4, 2), conv(64, 3, 1),
        tf_keras.layers.Flatten(),
        tf_keras.layers.Dense(512, activation="relu", kernel_initializer=init()),
    ])


def module_network(batch):
    return NatureCNN(tf.TensorSpec(SHAPE, tf.uint8))


def keras_network(batch):
    model = keras_nature_cnn()
    model(tf.cast(batch, tf.float32))  # Keras creates its variables on the first call
    return model


def forward_of(network):
    if isinstance(network, tf_keras.Model):
        return lambda x: network(tf.cast(x, tf.float32))
    return network


def measure(make, batch, calls: int) -> dict:
    start = time.perf_counter()
    network = make(batch)
    build = time.perf_counter() - start
    forward = forward_of(network)

    def gradient(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(forward(x))
        return tape.gradient(loss, network.trainable_variables)

    out = {"build": build}
    for name, fn in (("forward", forward), ("gradient", gradient)):
        traced = tf.function(fn)
        start = time.perf_counter()
        tf.nest.map_structure(lambda t: t.numpy(), traced(batch))
        out[f"trace {name}"] = time.perf_counter() - start
        start = time.perf_counter()
        for _ in range(calls):
            result = traced(batch)
        tf.nest.map_structure(lambda t: t.numpy(), result)
        out[name] = (time.perf_counter() - start) / calls
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--trials", type=int, default=3)
    args = parser.parse_args()
    batch = tf.constant(np.random.default_rng(0).integers(0, 256, [8, *SHAPE]), tf.uint8)
    results = {"tf.Module": [], "tf_keras": []}
    for _ in range(args.trials):  # interleaved, so that load changes hit both alike
        results["tf.Module"].append(measure(module_network, batch, args.calls))
        results["tf_keras"].append(measure(keras_network, batch, args.calls))
    keys = list(results["tf.Module"][0])
    print(f"nature_cnn on [8, 84, 84, 4] uint8, median of {args.trials} trials, {args.calls} calls each")
    print(f"{'':10}" + "".join(f"{k:>16}" for k in keys))
    for name, rows in results.items():
        medians = [statistics.median(r[k] for r in rows) for k in keys]
        print(f"{name:10}" + "".join(f"{m * 1000:>13.2f} ms" for m in medians))


if __name__ == "__main__":
    main()
