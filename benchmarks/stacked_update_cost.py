"""What training several seeds' networks as one stack costs, against one seed's: PPO-shaped updates.

The question behind ``--vectorize-seeds`` (docs/graph-environments.md): when S seeds' networks are
stacked along a leading axis (weights ``[S, in, out]``, batched matmuls), does an update cost about
what one seed's does, so S seeds train in about the time of one? Three ways of running S seeds' updates
are timed side by side, each as a graph loop of ``--updates`` updates in one ``tf.function`` call:

* ``one``: one seed alone (the unit; per-seed cost = its time);
* ``loop``: S separate networks traced into one graph (what fusing S whole runs into one call gives);
* ``stack``: one network of S stacked members (per-seed minibatches, losses, clipping and Adam moments).

Each update is PPO's on CartPole's shapes: actor and critic MLPs 4-64-64, a minibatch of 64 rows,
the clipped surrogate, the value loss, global-norm clipping per seed, and Adam::

    python benchmarks/stacked_update_cost.py --seeds 16 [--jit-compile]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import tensorflow as tf

OBS, ACTIONS, HIDDEN, ROWS = 4, 2, 64, 64


def mlp_weights(stack: int, sizes: list, rng: np.random.Generator) -> list:
    """Variables ``[stack, in, out]`` and ``[stack, 1, out]`` of an MLP."""
    out = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        out.append(tf.Variable(rng.normal(0, 1 / np.sqrt(n_in), [stack, n_in, n_out]).astype(np.float32)))
        out.append(tf.Variable(np.zeros([stack, 1, n_out], np.float32)))
    return out


def mlp(weights: list, x):
    for i in range(0, len(weights), 2):
        x = tf.matmul(x, weights[i]) + weights[i + 1]
        if i + 2 < len(weights):
            x = tf.tanh(x)
    return x


class Seeds:
    """``stack`` seeds' actor and critic, as stacked variables, and Adam's moments for each."""

    def __init__(self, stack: int, seed: int):
        rng = np.random.default_rng(seed)
        self.stack = stack
        self.actor = mlp_weights(stack, [OBS, HIDDEN, HIDDEN, ACTIONS], rng)
        self.critic = mlp_weights(stack, [OBS, HIDDEN, HIDDEN, 1], rng)
        self.variables = self.actor + self.critic
        self.m = [tf.Variable(tf.zeros_like(v)) for v in self.variables]
        self.v = [tf.Variable(tf.zeros_like(v)) for v in self.variables]

    def update(self, obs, action, advantage, ret, old_log_prob):
        """One PPO update of every member on its own ``[stack, ROWS]`` minibatch."""
        with tf.GradientTape() as tape:
            logits = mlp(self.actor, obs)
            log_prob = -tf.nn.sparse_softmax_cross_entropy_with_logits(action, logits)
            ratio = tf.exp(log_prob - old_log_prob)
            adv = (advantage - tf.reduce_mean(advantage, -1, keepdims=True)) / (
                tf.math.reduce_std(advantage, -1, keepdims=True) + 1e-8)
            surrogate = tf.minimum(ratio * adv, tf.clip_by_value(ratio, 0.8, 1.2) * adv)
            value = tf.squeeze(mlp(self.critic, obs), -1)
            per_seed = -tf.reduce_mean(surrogate, -1) + 0.5 * tf.reduce_mean(tf.square(ret - value), -1)
            loss = tf.reduce_sum(per_seed)  # members share no variable: each gets its own gradient
        grads = tape.gradient(loss, self.variables)
        norms = tf.sqrt(tf.add_n([tf.reduce_sum(tf.square(g), axis=list(range(1, len(g.shape)))) for g in grads]))
        scale = tf.minimum(1.0, 0.5 / (norms + 1e-6))  # global-norm clipping, per member
        for g, v, m, s in zip(grads, self.variables, self.m, self.v):
            g = g * tf.reshape(scale, [-1] + [1] * (len(g.shape) - 1))
            m.assign(0.9 * m + 0.1 * g)
            s.assign(0.999 * s + 0.001 * tf.square(g))
            v.assign_sub(3e-4 * m / (tf.sqrt(s) + 1e-5))
        return per_seed


def minibatch(stack: int, seed: int) -> tuple:
    rng = np.random.default_rng(seed)
    return (tf.constant(rng.normal(size=[stack, ROWS, OBS]).astype(np.float32)),
            tf.constant(rng.integers(0, ACTIONS, [stack, ROWS]).astype(np.int32)),
            *(tf.constant(rng.normal(size=[stack, ROWS]).astype(np.float32)) for _ in range(3)))


def graph_loop(groups: list, updates: int, jit_compile: bool = False):
    """One ``tf.function``: ``updates`` updates of every group, in a graph loop (one XLA program with ``jit_compile``)."""
    batches = [minibatch(g.stack, i) for i, g in enumerate(groups)]

    @tf.function(jit_compile=jit_compile)
    def run():
        def body(u):
            for group, batch in zip(groups, batches):
                group.update(*batch)
            return (u + 1,)
        return tf.while_loop(lambda u: u < updates, body, (tf.constant(0),))
    return run


def seconds(run, repeats: int) -> float:
    run()  # traced
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=16)
    parser.add_argument("--updates", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--jit-compile", action="store_true", help="each variant's loop as one XLA program")
    args = parser.parse_args()
    S, xla = args.seeds, args.jit_compile
    runs = {"one": graph_loop([Seeds(1, 0)], args.updates, xla),
            "loop": graph_loop([Seeds(1, s) for s in range(S)], args.updates, xla),
            "stack": graph_loop([Seeds(S, 0)], args.updates, xla)}
    timed = {}
    for _round in range(2):  # interleaved, so drift of the machine's load hits each alike
        for name, run in runs.items():
            timed[name] = min(timed.get(name, float("inf")), seconds(run, args.repeats))
    unit = timed["one"] / args.updates
    print(f"{args.updates} PPO-shaped updates{' (XLA)' if xla else ''}, best of {2 * args.repeats}; per update:")
    print(f"  one seed            {1e6 * unit:8.0f} us")
    for name in ("loop", "stack"):
        per = timed[name] / args.updates
        print(f"  {S} seeds, {name:5s}    {1e6 * per:8.0f} us  = {per / unit:5.2f}x one seed "
              f"({S * unit / per:5.2f} seeds' updates in the time of one)")


if __name__ == "__main__":
    main()
