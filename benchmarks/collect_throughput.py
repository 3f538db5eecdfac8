"""Collection speed of the PPO MLP policy against raw Gymnasium stepping.

Side by side in one run: CartPole-v1 with N copies (default 64) stepped by
`gymnasium.make_vec(..., "sync")` with random actions, and the engine's
synchronous pipeline's collector with the default PPO policy (sampling,
value head, transformers, the experience arrays). Target: the collector keeps
at least 70% of raw stepping at 64 copies, 40% at 8. Trials alternate; the best
of each is shown.

    python benchmarks/collect_throughput.py [--num-envs 64] [--unrolls 40] [--trials 3]
"""

import argparse
import tempfile
import time

import gymnasium
import numpy as np

from rlengine.config import DEFAULT_CONFIG, apply_overrides, build_config, read_toml
from rlengine.plugin.manager import build_plugins
from rlengine.run.build import build_components, config_classes

UNROLL = 32


def raw_steps_per_sec(num_envs: int, steps: int) -> float:
    venv = gymnasium.make_vec("CartPole-v1", num_envs, vectorization_mode="sync")
    venv.reset(seed=0)
    actions = np.random.randint(0, 2, size=(steps, num_envs))
    start = time.perf_counter()
    for action in actions:
        venv.step(action)
    elapsed = time.perf_counter() - start
    venv.close()
    return steps * num_envs / elapsed


def collection_config(plugins, num_envs: int):
    """The default config (PPO on CartPole-v1) with ``num_envs`` copies, unrolls of ``UNROLL``, no writers."""
    raw = apply_overrides(read_toml(DEFAULT_CONFIG), [f"train.num_envs={num_envs}", f"train.unroll_length={UNROLL}",
                                                      "train.writers=[]"])
    return build_config(raw, config_classes(plugins))


def driver_steps_per_sec(components, unrolls: int) -> float:
    driver = components.pipeline.collector
    carry = driver.start()
    for _ in range(2):  # trace and warm up
        _, carry = driver.run(carry)
    start = time.perf_counter()
    for _ in range(unrolls):
        experience, carry = driver.run(carry)
    experience.step_type.numpy()
    elapsed = time.perf_counter() - start
    return unrolls * UNROLL * driver.batch / elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--num-envs", type=int, default=64)
    parser.add_argument("--unrolls", type=int, default=40)
    parser.add_argument("--trials", type=int, default=3)
    args = parser.parse_args()
    plugins = build_plugins()
    components = build_components(collection_config(plugins, args.num_envs), plugins, tempfile.mkdtemp())
    raw_best, driver_best = 0.0, 0.0
    for _ in range(args.trials):
        raw_best = max(raw_best, raw_steps_per_sec(args.num_envs, args.unrolls * UNROLL))
        driver_best = max(driver_best, driver_steps_per_sec(components, args.unrolls))
    components.close()
    print(f"CartPole-v1, {args.num_envs} copies: raw gymnasium (random actions) {raw_best:,.0f} steps/s; "
          f"rlengine PPO collection {driver_best:,.0f} steps/s; ratio {driver_best / raw_best:.0%} "
          f"(target >= {'70%' if args.num_envs >= 64 else '40%'})")


if __name__ == "__main__":
    main()
