"""SAC on Pendulum-v1 against Stable-Baselines3 (RL-Zoo settings), measured here.

1. Learner throughput: gradient updates per second at batch 256, 2x256 MLPs,
   twin critics, from a filled replay buffer (SB3: 107/s), next to the
   compute limit: this machine's measured rate for SAC-shaped matmuls divided
   by ~0.55 GFLOP per update.
2. Time to -200: each seed trains `examples/sac_pendulum.toml` in a fresh
   process; prints env steps and training wall time (building and tracing
   included, evaluation excluded) at the first evaluation >= -200
   (SB3: 26.9 / 28.8 / 35.6 s, median 28.8 s).

    python benchmarks/sac_pendulum.py [--seeds 3] [--updates 2000] [--skip-learning]
"""

import argparse
import statistics
import time

from runs import first_reaching, train_in_fresh_process

SB3_UPDATES_PER_SEC = 107.0
SB3_MEDIAN_SECONDS = 28.8
GFLOP_PER_UPDATE = 0.55  # one SAC update at these sizes (the count)


def matmul_gflops(n: int = 2000) -> float:
    """This machine's rate for SAC-shaped matmuls: 256x256 layers at batch 256, forward and backward."""
    import tensorflow as tf

    x = tf.random.normal([256, 256])
    w1, w2 = tf.Variable(tf.random.normal([256, 256])), tf.Variable(tf.random.normal([256, 256]))

    @tf.function
    def run(count):
        def body(i, acc):
            with tf.GradientTape() as tape:
                y = tf.reduce_sum(tf.tanh(tf.matmul(tf.tanh(tf.matmul(x, w1)), w2)))
            g1, g2 = tape.gradient(y, [w1, w2])
            return i + 1, acc + g1[0, 0] + g2[0, 0]

        return tf.while_loop(lambda i, _: i < count, body, (0, 0.0))

    run(10)
    start = time.perf_counter()
    run(n)[1].numpy()
    matmuls = 5  # 2 forward, 3 backward (no gradient for the input)
    return n * matmuls * 2 * 256 ** 3 / (time.perf_counter() - start) / 1e9


def updates_per_second(num_updates: int) -> float:
    import tensorflow as tf
    from update_profile import build_learner  # the example, its buffer filled with random steps

    parts = build_learner("examples/sac_pendulum.toml", [])
    chunk = tf.constant(200)
    parts.learner.train_from_replay(chunk)  # trace
    start = time.perf_counter()
    for _ in range(num_updates // 200):
        losses = parts.learner.train_from_replay(chunk)
    losses["loss/total"].numpy()
    elapsed = time.perf_counter() - start
    parts.close()
    return (num_updates // 200) * 200 / elapsed


def time_to_target(seed: int) -> tuple:
    _, env_steps, train_time, history = train_in_fresh_process("examples/sac_pendulum.toml", seed)
    return first_reaching(history, -200), env_steps, train_time, history


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--updates", type=int, default=2000)
    parser.add_argument("--skip-learning", action="store_true")
    args = parser.parse_args()
    rate = updates_per_second(args.updates)
    peak = matmul_gflops()
    limit = peak / GFLOP_PER_UPDATE
    print(f"SAC learner: {rate:.0f} updates/s (batch 256, 2x256, twin critics); SB3 {SB3_UPDATES_PER_SEC:.0f}/s "
          f"(ratio {rate / SB3_UPDATES_PER_SEC:.2f})")
    print(f"compute limit: SAC-shaped matmuls run at {peak:.0f} GFLOP/s here, so ~{limit:.0f} updates/s at "
          f"{GFLOP_PER_UPDATE} GFLOP each; the learner reaches {rate / limit:.0%} of it")
    if args.skip_learning:
        return
    times = []
    for seed in range(args.seeds):
        hit, env_steps, train_time, history = time_to_target(seed)
        if hit:
            times.append(hit[1])
            print(f"seed {seed}: {hit[2]:.1f} >= -200 at {hit[0]} env steps, {hit[1]:.1f} s training")
        else:
            print(f"seed {seed}: not reached in {env_steps} env steps (best {max(r for *_, r in history):.1f}), "
                  f"{train_time:.1f} s")
    if times:
        median = statistics.median(times)
        print(f"median time to -200: {median:.1f} s over {len(times)}/{args.seeds} seeds "
              f"(SB3 here: {SB3_MEDIAN_SECONDS} s; ratio {median / SB3_MEDIAN_SECONDS:.2f})")


if __name__ == "__main__":
    main()
