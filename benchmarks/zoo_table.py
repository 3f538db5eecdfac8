"""The RL Zoo parity table: first-party presets (the Zoo's settings) run over seeds, against the Zoo's published
returns.

    python benchmarks/zoo_table.py [PAIR ...] [--seeds 3] [--first-seed 0] [--fraction 1.0 | --env-steps N]
                                   [--evaluations 10] [--runs-dir DIR] [--jobs 1]

A pair is a preset name, ``<algorithm>/<env id>`` (``rlengine plugins`` lists them; the default is the pairs that
fit a few minutes each here, ``CHEAP``). Each seed is a fresh ``rlengine`` process, one after the other by default,
with the preset's settings, no early stop, the budget given (default: the Zoo's, the preset's
``train.num_env_steps``) and about ``--evaluations`` evaluations spread over it (the last at the end).

Prints per pair: env steps, the final and best evaluation returns (mean +- std over seeds), the Zoo's published
return and budget (from the preset's header), the ratio (final / Zoo where the Zoo's return is positive, Zoo /
final where it is negative: at least 1 is as good as the Zoo either way), whether the final mean reaches the Zoo's
mean minus one std ("meets"; "-" below the Zoo's budget, where only a side-by-side run of Stable-Baselines3 at the
same budget compares), and the wall-clock seconds a seed took (evaluation included). The runs are kept under
``--runs-dir``, ``<algorithm>_<env id>/seed<N>``, for ``rlengine plot`` to draw their curves.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from rlengine.config import read_toml

#: Pairs whose Zoo budget takes minutes, not hours, on a 2-core machine.
CHEAP = ["ppo/CartPole-v1", "dqn/CartPole-v1", "sac/Pendulum-v1", "td3/Pendulum-v1"]

_RUN = """
import json, sys
import rlengine
result = rlengine.Engine(None, sys.argv[1:]).train()
print(json.dumps([result.env_steps, result.train_time]))
"""

_ZOO = re.compile(r"reports (-?[\d.]+) \+- ([\d.]+) for")


def preset_file(pair: str) -> str:
    from rlengine_algorithms.presets import preset_files

    files = preset_files()
    if pair not in files:
        raise SystemExit(f"zoo_table: no first-party preset {pair!r}; choose from {', '.join(sorted(files))}")
    return str(files[pair])


def zoo_figures(path: str) -> tuple:
    """``(mean, std, budget)`` the preset's header quotes from the Zoo's benchmark."""
    header = " ".join(line.lstrip("# ") for line in open(path).read().split("\n\n", 1)[0].splitlines())
    found = _ZOO.search(header)
    budget = read_toml(path)["train"]["num_env_steps"]
    return (float(found[1]), float(found[2]), budget) if found else (None, None, budget)


def run_seed(pair: str, seed: int, env_steps: int, evaluations: int, train: dict, runs_dir: str) -> tuple:
    """One seed in a fresh process: ``(final, best, seconds)`` of its evaluations."""
    algorithm, env = pair.split("/", 1)
    per_iteration = train["num_envs"] * train["unroll_length"]
    interval = max(1, env_steps // per_iteration // evaluations)
    root = os.path.join(runs_dir, pair.replace("/", "_"), f"seed{seed}")
    overrides = [f'train.algorithm="{algorithm}"', f'train.env="{env}"', f"train.seed={seed}",
                 f"train.num_env_steps={env_steps}", f"train.eval_interval={interval}", 'train.writers=["jsonl"]',
                 f'train.root_dir="{root}"', "train.target_return=1e30"]  # no early stop
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", _RUN, *overrides], check=True, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    with open(os.path.join(root, "metrics.jsonl")) as f:
        returns = [row["eval/average_return"] for row in map(json.loads, f) if "eval/average_return" in row]
    return returns[-1], max(returns), seconds


def spread(values: list) -> str:
    return f"{np.mean(values):8.1f} +- {np.std(values):6.1f}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("pairs", nargs="*", default=CHEAP)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--first-seed", type=int, default=0, help="seeds run: first-seed ... first-seed + seeds - 1")
    parser.add_argument("--fraction", type=float, default=1.0, help="of the Zoo's budget")
    parser.add_argument("--env-steps", type=int, default=0, help="a budget for every pair (overrides --fraction)")
    parser.add_argument("--evaluations", type=int, default=10)
    parser.add_argument("--runs-dir", default="", help="where the runs are kept (default: a new temporary dir)")
    parser.add_argument("--jobs", type=int, default=1, help="seeds run at once (seconds per seed then share cores)")
    args = parser.parse_args()
    runs_dir = args.runs_dir or tempfile.mkdtemp(prefix="rlengine-zoo-")
    print(f"runs in {runs_dir}")
    print(f"{'pair':34s} {'env steps':>10s} {'final':>18s} {'best':>18s} {'Zoo':>18s} {'Zoo steps':>10s} "
          f"{'ratio':>6s} {'meets':>5s} {'s/seed':>7s}", flush=True)
    for pair in args.pairs:
        path = preset_file(pair)
        zoo_mean, zoo_std, zoo_budget = zoo_figures(path)
        env_steps = args.env_steps or int(zoo_budget * args.fraction)
        train = read_toml(path)["train"]
        with ThreadPoolExecutor(args.jobs) as pool:
            runs = list(pool.map(lambda seed: run_seed(pair, seed, env_steps, args.evaluations, train, runs_dir),
                                 range(args.first_seed, args.first_seed + args.seeds)))
        finals, bests, seconds = ([r[i] for r in runs] for i in range(3))
        zoo = "(none published)" if zoo_mean is None else f"{zoo_mean:8.1f} +- {zoo_std:6.1f}"
        ratio = "-" if not zoo_mean or not np.mean(finals) else (
            f"{np.mean(finals) / zoo_mean:.2f}" if zoo_mean > 0 else f"{zoo_mean / np.mean(finals):.2f}")
        meets = "-" if zoo_mean is None or env_steps < zoo_budget else (
            "yes" if np.mean(finals) >= zoo_mean - zoo_std else "no")
        print(f"{pair:34s} {env_steps:>10,} {spread(finals):>18s} {spread(bests):>18s} {zoo:>18s} "
              f"{zoo_budget:>10,} {ratio:>6s} {meets:>5s} {np.mean(seconds):7.0f}", flush=True)


if __name__ == "__main__":
    main()
