"""Population-based training against a search of the same budget (issue 48's PBT target).

Two studies of PPO on LunarLander-v3 (its Zoo preset), tuning the learning rate and the entropy
coefficient over the same ranges, each spending ``population x env-steps`` env steps:

* **PBT**: ``rlengine tune --ray --pbt --population P``: P members, each drawn at random, ranked every
  ``--perturb-interval`` env steps; the bottom quarter copies a top-quarter member and perturbs its values.
* **search**: ``rlengine tune --jobs 2 --trials P --startup-trials P --pruner none``: P configs drawn at random
  (the sampler's startup phase), each trained to the budget with its values fixed.

Printed: each member's and trial's final objective (the mean of its last ``--last-evals`` evaluation returns,
as tune ranks them), the best and the mean of each study, its wall time, and the best one's newest checkpoint
evaluated again over ``--episodes`` fresh episodes (seed 1000), the figure to compare.

    python benchmarks/pbt_vs_search.py [--population 8] [--env-steps 327680] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

PRESET = os.path.join(os.path.dirname(__file__), "..", "plugins", "algorithms", "rlengine_algorithms", "presets",
                      "ppo_LunarLander-v3.toml")
PARAMS = ["ppo.learning_rate=loguniform:3e-5:3e-3", "ppo.entropy_coef=float:0:0.03"]
ITERATION = 16 * 1024  # the preset's env steps per iteration (16 copies x 1024 steps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--population", type=int, default=8, help="PBT's members, and the search's trials")
    parser.add_argument("--env-steps", type=int, default=20 * ITERATION, help="each member's and trial's budget")
    parser.add_argument("--perturb-interval", type=int, default=4 * ITERATION, help="env steps between PBT rounds")
    parser.add_argument("--eval-interval", type=int, default=2, help="iterations between evaluations")
    parser.add_argument("--last-evals", type=int, default=3, help="the objective: mean of the last K evaluations")
    parser.add_argument("--episodes", type=int, default=50, help="episodes of the final evaluation of each best")
    parser.add_argument("--seed", type=int, default=0, help="the sampler's seed and every run's train.seed")
    parser.add_argument("--only", choices=["pbt", "search"], help="run one study only")
    parser.add_argument("--work-dir", help="where the studies go (default: a new temporary directory)")
    args = parser.parse_args()
    work = args.work_dir or tempfile.mkdtemp(prefix="pbt-vs-search-")
    print(f"PPO LunarLander-v3, {args.population} x {args.env_steps:,} env steps a study, params {PARAMS}, "
          f"seed {args.seed}; studies in {work}", flush=True)
    common = [PRESET, "--num-env-steps", str(args.env_steps), "--seed", str(args.seed), "--last-evals",
              str(args.last_evals), "--set", f"train.eval_interval={args.eval_interval}",
              *[part for param in PARAMS for part in ("--param", param)]]
    studies = {
        "pbt": ["--ray", "--pbt", "--population", str(args.population), "--perturb-interval",
                str(args.perturb_interval)],
        "search": ["--jobs", "2", "--trials", str(args.population), "--startup-trials", str(args.population),
                   "--pruner", "none"],
    }
    for name, extra in studies.items():
        if args.only and name != args.only:
            continue
        tune_dir = os.path.join(work, name)
        start = time.monotonic()
        done = subprocess.run(["rlengine", "tune", *common, *extra, "--tune-dir", tune_dir],
                              capture_output=True, text=True)
        seconds = time.monotonic() - start
        if done.returncode:
            print(f"{name}: rlengine tune exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
            continue
        report(name, tune_dir, seconds, args)


def report(name: str, tune_dir: str, seconds: float, args: argparse.Namespace) -> None:
    finals = final_runs(name, tune_dir)
    objectives = {label: objective(run, args.last_evals) for label, run in finals.items()}
    best = max(objectives, key=objectives.get)
    again = evaluate(finals[best], args.episodes)
    values = list(objectives.values())
    print(f"{name}: {len(values)} runs in {seconds:.0f} s; objectives "
          + ", ".join(f"{label} {value:.1f}" for label, value in sorted(objectives.items())), flush=True)
    print(f"{name}: best {best} {objectives[best]:.1f}, mean {statistics.mean(values):.1f} +- "
          f"{statistics.pstdev(values):.1f}; the best's newest checkpoint over {args.episodes} new episodes: "
          f"{again:.1f}", flush=True)


def final_runs(name: str, tune_dir: str) -> dict:
    """Label -> run directory that ends each member (its last generation) or trial."""
    runs = {}
    for entry in sorted(os.listdir(tune_dir)):
        path = os.path.join(tune_dir, entry)
        if name == "pbt" and entry.startswith("member-"):
            generations = sorted((d for d in os.listdir(path) if d.startswith("gen-")), key=lambda d: int(d[4:]))
            runs[entry] = os.path.join(path, generations[-1])
        elif name == "search" and entry.startswith("trial-"):
            runs[entry] = path
    return runs


def objective(run_dir: str, last: int) -> float:
    """The mean of the run's last ``last`` evaluation returns, as tune ranks it."""
    with open(os.path.join(run_dir, "metrics.jsonl")) as rows:
        returns = [row["eval/average_return"] for row in map(json.loads, rows) if "eval/average_return" in row]
    return statistics.mean(returns[-last:])


def evaluate(run_dir: str, episodes: int) -> float:
    done = subprocess.run(["rlengine", "eval", run_dir, "--episodes", str(episodes),
                           "--seed", "1000", "--json"], capture_output=True, text=True, check=True)
    return float(json.loads(done.stdout.strip().splitlines()[-1])["mean_return"])


if __name__ == "__main__":
    main()
