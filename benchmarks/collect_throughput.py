"""Collection speed of the PPO MLP policy against raw Gymnasium stepping.

Side by side in one run: CartPole-v1 with N copies (default 64) stepped by
`gymnasium.make_vec(..., "sync")` with random actions, and the engine's
synchronous pipeline's collector with the default PPO policy (sampling,
value head, transformers, the experience arrays). Target: the collector keeps
at least 70% of raw stepping at 64 copies, 40% at 8. Trials alternate; the
best of each is shown.

``--executor both`` adds, side by side, a second collector whose unroll runs
on TensorFlow's default executor instead of the single-threaded one runs use
(see ``rlengine/collect/stepping_function.py``).

    python benchmarks/collect_throughput.py [--num-envs 64] [--unrolls 40] [--trials 3] [--executor both]
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


def on_default_executor(components) -> None:
    """Make the collector call its plain ``tf.function`` (the default executor), as before stepping_function."""
    collector = components.pipeline.collector
    collector.run, collector.start = collector.run.traced, collector.start.traced


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
    parser.add_argument("--executor", choices=["single", "both"], default="single")
    args = parser.parse_args()
    plugins = build_plugins()
    raw = apply_overrides(read_toml(DEFAULT_CONFIG), [f"train.num_envs={args.num_envs}",
                                                      f"train.unroll_length={UNROLL}", "train.writers=[]"])
    config = build_config(raw, config_classes(plugins))
    collectors = {"single-threaded": build_components(config, plugins, tempfile.mkdtemp())}
    if args.executor == "both":
        collectors["default"] = build_components(config, plugins, tempfile.mkdtemp())
        on_default_executor(collectors["default"])
    raw_best, best = 0.0, dict.fromkeys(collectors, 0.0)
    for _ in range(args.trials):
        raw_best = max(raw_best, raw_steps_per_sec(args.num_envs, args.unrolls * UNROLL))
        for name, components in collectors.items():
            best[name] = max(best[name], driver_steps_per_sec(components, args.unrolls))
    for components in collectors.values():
        components.close()
    target = "70%" if args.num_envs >= 64 else "40%"
    print(f"CartPole-v1, {args.num_envs} copies: raw gymnasium (random actions) {raw_best:,.0f} steps/s")
    for name, steps in best.items():
        print(f"rlengine PPO collection, {name} executor: {steps:,.0f} steps/s; "
              f"ratio to raw {steps / raw_best:.0%} (target >= {target})")


if __name__ == "__main__":
    main()
