"""Collection speed of one task through each vector backend, at 8, 64 and 256 copies, in one table.

A row is an engine env id with config overrides (``ROWS``: CartPole-v1 through the gym plugin's
``SyncVectorEnv``, its native vector env ``CartPoleVectorEnv``, and EnvPool's ``envpool/CartPole-v1``,
skipped with a note when no ``envpool/`` environment is registered). Each is built the way a run
builds it (the default config: PPO's policy and value head, unrolls of 32 steps), and measured two
ways: collection through the engine's collector (env steps/s), and raw stepping of the very
Environment object the run made, with random actions (no policy, no tensors). Trials alternate
between the rows; the best of each is shown, with collection's ratio to the first row.

Target (issue 45): the native backend's collection at 64 copies at least 5x sync's.

    python benchmarks/vector_backends.py [--copies 8 64 256] [--trials 3] [--seconds 2] [--async] [--set KEY=VALUE ...]

``--set`` adds an override to every row (e.g. ``train.env_step_timeout=0``: no watch thread around the
environment's calls).
"""

import argparse
import datetime
import time

from atari_throughput import collect_steps_per_sec
from envpool_backends import UNROLL, components, raw_steps_per_sec

from rlengine.config import DEFAULT_CONFIG
from rlengine.plugin.manager import build_plugins

#: (label, engine env id, config overrides); the first row is the baseline of the ratios.
ROWS = [
    ("gym sync", "CartPole-v1", ('gym.vectorization="sync"',)),
    ("gym native", "CartPole-v1", ('gym.vectorization="native"',)),
    ("envpool", "envpool/CartPole-v1", ()),
]
ASYNC_ROW = ("gym async", "CartPole-v1", ('gym.vectorization="async"',))


def measure(plugins, rows: list, copies: int, trials: int, seconds: float, extra: tuple = ()) -> dict:
    """``label -> [raw best, collection best]`` over ``trials`` alternating trials of about ``seconds`` each."""
    built = {label: components(plugins, DEFAULT_CONFIG, env, copies, *overrides, *extra)
             for label, env, overrides in rows}
    best = {label: [0.0, 0.0] for label in built}
    unrolls = dict.fromkeys(built, 1)
    try:
        for _ in range(trials):
            for label, parts in built.items():
                best[label][0] = max(best[label][0], raw_steps_per_sec(parts.envs[0], seconds))
                start = time.perf_counter()
                best[label][1] = max(best[label][1], collect_steps_per_sec(parts.pipeline.collector, unrolls[label],
                                                                           UNROLL))
                # the next trial's unrolls sized to last about ``seconds``
                unrolls[label] = max(1, int(unrolls[label] * seconds / max(time.perf_counter() - start, 1e-3)))
    finally:
        for parts in built.values():
            parts.close()
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--copies", type=int, nargs="+", default=[8, 64, 256])
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--async", dest="with_async", action="store_true",
                        help="also AsyncVectorEnv (one process per copy: at 8 copies only)")
    parser.add_argument("--set", dest="extra", action="append", default=[], metavar="KEY=VALUE",
                        help="a config override for every row")
    args = parser.parse_args()
    plugins = build_plugins()
    rows = []
    for label, env, overrides in ROWS:
        if env.startswith("envpool/") and "envpool" not in plugins.registries.environments:
            print(f"({label}: skipped, no envpool/ environment is registered: pip install -e plugins/envpool)")
        else:
            rows.append((label, env, overrides))
    print(f"{datetime.date.today()}, default config (PPO's policy, unrolls of {UNROLL} steps)"
          f"{''.join(', ' + e for e in args.extra)}, best of {args.trials} trials; env steps/s")
    print(f"| copies | backend | env id | raw stepping | collection | collection / {rows[0][0]} |")
    print("|---:|---|---|---:|---:|---:|")
    for copies in args.copies:
        these = rows + ([ASYNC_ROW] if args.with_async and copies <= 8 else [])
        best = measure(plugins, these, copies, args.trials, args.seconds, tuple(args.extra))
        baseline = best[rows[0][0]][1]
        for label, env, _ in these:
            raw, collected = best[label]
            print(f"| {copies} | {label} | `{env}` | {raw:,.0f} | {collected:,.0f} | {collected / baseline:.2f}x |",
                  flush=True)


if __name__ == "__main__":
    main()
