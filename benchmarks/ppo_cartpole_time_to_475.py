"""Time for `rlengine train` (defaults: PPO on CartPole-v1) to reach 475.

Each seed trains in a fresh process (cold tracing, as `rlengine train`).
Prints, per seed, the training wall time (from the start of Engine.train(),
building, spec preparation and tracing included, evaluation excluded) and
env steps at the first evaluation averaging >= 475, with the phase split
read from the run's metrics.jsonl; then the median, next to the
Stable-Baselines3 figure measured on this machine (median 3.8 s). Finally it
times the whole `rlengine train` command, imports included, once.

With ``--sb3-python`` (the peer venv's python; ``--peers``: the shared harness
directory, default ``../shared/peers``) it runs side by side instead: per seed,
SB3 with RL-Zoo settings then rlengine, 51,200 env steps each, no early stop,
evaluation every 2,560 steps, and prints both systems' first evaluation >= 475
("hit"), the one after which every evaluation stays there ("for good") and env
steps/s, then the rlengine/SB3 ratios of the medians against the targets
(hit <= 0.5, for good <= 0.6, steps/s >= 2).

    python benchmarks/ppo_cartpole_time_to_475.py [--seeds 5] [--skip-command]
    python benchmarks/ppo_cartpole_time_to_475.py --seeds 5 --sb3-python /tmp/peers/sb3/bin/python
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from runs import first_reaching, for_good, sb3_in_fresh_process, train_in_fresh_process

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
    parser.add_argument("--sb3-python", help="the Stable-Baselines3 venv's python: run side by side")
    parser.add_argument("--peers", default=os.path.join("..", "shared", "peers"), help="the shared peer harness")
    args = parser.parse_args()
    if args.sb3_python:
        side_by_side(args)
        return
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


SIDE_BY_SIDE_STEPS, SIDE_BY_SIDE_EVERY = 51_200, 2_560
GOALS = {"hit": ("<=", 0.5), "for_good": ("<=", 0.6), "steps_per_sec": (">=", 2.0)}


def side_by_side(args: argparse.Namespace) -> None:
    """SB3 and rlengine alternating per seed, the same budget and evaluation interval; medians and ratios."""
    rows: dict = {"sb3": [], "rlengine": []}
    print(f"side by side: {SIDE_BY_SIDE_STEPS} env steps, evaluation every {SIDE_BY_SIDE_EVERY}, no early stop")
    print("seed  system     hit_s  hit_steps  for_good_s  steps/s   final")
    for seed in range(args.seeds):
        for system in rows:
            if system == "sb3":
                history, speed = sb3_in_fresh_process(args.peers, args.sb3_python, "ppo_cartpole", seed,
                                                      SIDE_BY_SIDE_STEPS, SIDE_BY_SIDE_EVERY)
            else:
                _, env_steps, train_time, history = train_in_fresh_process(
                    "-", seed, f"train.num_env_steps={SIDE_BY_SIDE_STEPS}", "train.target_return=1e9",
                    f"train.eval_interval={SIDE_BY_SIDE_EVERY // 256}")
                speed = env_steps / train_time  # as SB3's: evaluation excluded (building and tracing included)
            hit, good = first_reaching(history, 475), for_good(history, 475)
            rows[system].append({"hit": hit and hit[1], "for_good": good and good[1], "steps_per_sec": speed})
            print(f"{seed:4d}  {system:9s}  {_s(hit and hit[1])}  {hit[0] if hit else '-':>9}  {_s(good and good[1]):>10}"
                  f"  {speed:7.0f}  {history[-1][2]:6.1f}", flush=True)
    medians = {system: {key: _median([r[key] for r in rs]) for key in GOALS} for system, rs in rows.items()}
    for key, (sense, goal) in GOALS.items():
        ours, theirs = medians["rlengine"][key], medians["sb3"][key]
        reached = {s: sum(r[key] is not None for r in rs) for s, rs in rows.items()}
        ratio = ours / theirs if ours is not None and theirs else None
        met = ratio is not None and (ratio <= goal if sense == "<=" else ratio >= goal)
        print(f"{key:13s}  rlengine {_s(ours)} ({reached['rlengine']}/{args.seeds})  sb3 {_s(theirs)} "
              f"({reached['sb3']}/{args.seeds})  ratio {'-' if ratio is None else f'{ratio:.2f}'}  goal {sense} {goal}"
              f"  {'met' if met else 'not met'}")


def _median(values: list):
    kept = [v for v in values if v is not None]
    return statistics.median(kept) if kept else None


def _s(value) -> str:
    return "     -" if value is None else f"{value:6.2f}"


if __name__ == "__main__":
    main()
