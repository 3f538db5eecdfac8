"""Collection speed of PPO with the Nature CNN on 8 Atari copies, against stepping the same copies
with random actions, side by side in one run (target: collection keeps >= 50% of raw stepping).

Both sides use the gym plugin's environment with the standard Atari preprocessing (frame skip 4,
84x84 grayscale, frame stack 4), under the vectorization given (async: one worker process per copy,
sync: every copy in this process). Trials alternate; the best of each is shown.

    python benchmarks/atari_throughput.py [--env ALE/Breakout-v5] [--vectorization async] [--unrolls 6]
"""

import argparse
import tempfile
import time

import numpy as np

from rlengine.config import apply_overrides, build_config, read_toml
from rlengine.plugin.manager import build_plugins
from rlengine.run.build import build_components, config_classes


def raw_steps_per_sec(env, steps: int) -> float:
    """The environment alone: random legal actions, no policy, no tensors."""
    num_actions = int(env.action_spec().maximum) + 1
    env.reset()
    actions = np.random.randint(0, num_actions, size=(steps, env.batch_size)).astype(np.int32)
    start = time.perf_counter()
    for action in actions:
        env.step(action)
    return steps * env.batch_size / (time.perf_counter() - start)


def collect_steps_per_sec(collector, unrolls: int, unroll_length: int) -> float:
    carry = collector.start()
    _, carry = collector.run(carry)  # trace
    start = time.perf_counter()
    for _ in range(unrolls):
        experience, carry = collector.run(carry)
    experience.step_type.numpy()
    return unrolls * unroll_length * collector.batch / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--env", default="ALE/Breakout-v5")
    parser.add_argument("--vectorization", choices=["sync", "async"], default="async")
    parser.add_argument("--unrolls", type=int, default=6, help="128-step unrolls of 8 copies per trial")
    parser.add_argument("--trials", type=int, default=3)
    args = parser.parse_args()
    plugins = build_plugins()
    raw = apply_overrides(read_toml("examples/ppo_breakout.toml"), [
        f'train.env="{args.env}"', "train.writers=[]", "train.num_eval_episodes=1",
        f'gym.vectorization="{args.vectorization}"'])
    config = build_config(raw, config_classes(plugins))
    components = build_components(config, plugins, tempfile.mkdtemp())
    env, collector, length = components.envs[0], components.pipeline.collector, config.train.unroll_length
    raw_best = collect_best = 0.0
    try:
        for _ in range(args.trials):
            raw_best = max(raw_best, raw_steps_per_sec(env, args.unrolls * length))
            collect_best = max(collect_best, collect_steps_per_sec(collector, args.unrolls, length))
    finally:
        components.close()
    print(f"{args.env}, {env.batch_size} copies ({args.vectorization}): random actions {raw_best:,.0f} steps/s; "
          f"PPO nature_cnn collection {collect_best:,.0f} steps/s; ratio {collect_best / raw_best:.0%} "
          "(target >= 50%)")


if __name__ == "__main__":
    main()
