"""Updates per second with and without XLA (``train.jit_compile``), side by side in one run.

    python benchmarks/xla_updates.py [--rounds 3] [--updates 1000]

For each job (examples/ppo_cartpole.toml, examples/sac_pendulum.toml, examples/td3_pendulum.toml and
examples/dqn_cartpole.toml), builds the run twice, jit_compile off and on, fills replay with random
transitions (off-policy) or collects one unroll (PPO), traces, then times ``--updates`` updates; the
two settings alternate for ``--rounds`` rounds and the medians are printed with the ratio. Tracing and
XLA's compilation are reported apart (the first call), since a run pays them once.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

JOBS = {
    "ppo CartPole-v1 (256-row minibatches)": ("examples/ppo_cartpole.toml", []),
    "sac Pendulum-v1 (256 batch, 2x256, twin critics)": ("examples/sac_pendulum.toml", []),
    "td3 Pendulum-v1": ("examples/td3_pendulum.toml", []),
    "dqn CartPole-v1": ("examples/dqn_cartpole.toml", []),
}


def build(example, overrides: list, jit: bool):
    from rlengine.config import apply_overrides, build_config, read_toml
    from rlengine.plugin.manager import build_plugins
    from rlengine.run.build import build_components, config_classes

    plugins = build_plugins()
    raw = apply_overrides(read_toml(example), [*overrides, "train.writers=[]", f"train.jit_compile={str(jit).lower()}"])
    return build_components(build_config(raw, config_classes(plugins)), plugins, tempfile.mkdtemp())


def timed_updates(parts, num_updates: int) -> tuple:
    """``(seconds of the first call, updates per second after it)``."""
    import tensorflow as tf

    pipeline, learner = parts.pipeline, parts.learner
    pipeline.start()
    if parts.replay is None:  # on-policy: one unroll, trained on again and again
        experience, _ = pipeline.collector.run(pipeline.carry)
        per_call = learner.algorithm.num_epochs * max(1, experience.reward.shape[0] - 1) * \
            experience.reward.shape[1] // max(1, learner.algorithm.mini_batch_size)

        def call():
            return learner.train(experience)
    else:
        while int(parts.replay.num_rows().numpy()) < 2000:  # random transitions
            pipeline.iterate(0)
        per_call, chunk = 100, tf.constant(100)

        def call():
            return learner.train_from_replay(chunk)
    start = time.perf_counter()
    call()["loss/total"].numpy()
    first = time.perf_counter() - start
    calls = max(1, num_updates // per_call)
    start = time.perf_counter()
    for _ in range(calls):
        losses = call()
    losses["loss/total"].numpy()
    return first, calls * per_call / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--updates", type=int, default=1000)
    args = parser.parse_args()
    print(f"{'job':52s} {'XLA off':>14s} {'XLA on':>14s} {'on/off':>7s} {'first call off/on':>18s}")
    for job, (example, overrides) in JOBS.items():
        rates, firsts = {False: [], True: []}, {False: [], True: []}
        for _ in range(args.rounds):
            for jit in (False, True):
                parts = build(example, overrides, jit)
                try:
                    first, rate = timed_updates(parts, args.updates)
                finally:
                    parts.close()
                rates[jit].append(rate)
                firsts[jit].append(first)
        off, on = statistics.median(rates[False]), statistics.median(rates[True])
        print(f"{job:52s} {off:9.0f} up/s {on:9.0f} up/s {on / off:7.2f} "
              f"{statistics.median(firsts[False]):8.1f}/{statistics.median(firsts[True]):.1f} s", flush=True)


if __name__ == "__main__":
    main()
