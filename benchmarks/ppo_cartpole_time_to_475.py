"""Time for `rlengine train` (defaults: PPO on CartPole-v1) to reach 475.

Each seed trains in a fresh process (cold tracing, as `rlengine train`).
Prints, per seed, the training wall time (from the start of Engine.train(),
building, spec preparation and tracing included, evaluation excluded) and
env steps at the first evaluation averaging >= 475, with the phase split
read from the run's metrics.jsonl; then the median, next to the
Stable-Baselines3 figure measured on this machine (median 3.8 s). Finally it
times the whole `rlengine train` command, imports included, once.

    python benchmarks/ppo_cartpole_time_to_475.py [--seeds 5] [--skip-command]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from runs import first_reaching, train_in_fresh_process

SB3_MEDIAN_SECONDS = 3.8


def phase_split(root_dir: str) -> dict:
    rows = [json.loads(line) for line in open(os.path.join(root_dir, "metrics.jsonl"))]
    train_rows = [r for r in rows if "time/collect" in r]
    collect = [r["time/collect"] for r in train_rows]
    update = [r["time/update"] for r in train_rows]
    steady_collect, steady_update = statistics.median(collect[1:]), statistics.median(update[1:])
    return {
        "tracing": collect[0] - steady_collect + update[0] - steady_update,
        "collect": sum(collect) - (collect[0] - steady_collect),
        "update": sum(update) - (update[0] - steady_update),
        "steps_per_sec": 256 / (steady_collect + steady_update),
        "summaries": train_rows[-1]["time/summaries"] / train_rows[-1]["time/training"],
    }


def one_seed(seed: int) -> tuple:
    """Train one seed in a fresh process, as `rlengine train` would (cold tracing)."""
    root, env_steps, _, history = train_in_fresh_process("-", seed)
    hit = first_reaching(history, 475)
    return hit, phase_split(root), (env_steps, max(r for *_, r in history))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--skip-command", action="store_true")
    args = parser.parse_args()
    times = []
    print("seed  env_steps  train_s  tracing_s  collect_s  update_s  steady_steps/s  summaries")
    for seed in range(args.seeds):
        hit, split, result = one_seed(seed)
        if hit is None:
            print(f"{seed:4d}  did not reach 475 in {result[0]} steps (best {result[1]})")
            continue
        times.append(hit[1])
        print(f"{seed:4d}  {hit[0]:9d}  {hit[1]:7.2f}  {split['tracing']:9.2f}  {split['collect']:9.2f}"
              f"  {split['update']:8.2f}  {split['steps_per_sec']:14.0f}  {split['summaries']:9.1%}")
    if times:
        median = statistics.median(times)
        print(f"median time to 475: {median:.2f} s over {len(times)}/{args.seeds} seeds "
              f"(SB3 here: {SB3_MEDIAN_SECONDS} s; ratio {median / SB3_MEDIAN_SECONDS:.2f})")
    if not args.skip_command:
        root = tempfile.mkdtemp(prefix="ppo-bench-cmd-")
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "rlengine.cli", "train", "--root-dir", root],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        print(f"whole `rlengine train` command, imports included: {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
