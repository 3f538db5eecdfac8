"""Issue 47's Pendulum target: offline algorithms on a medium-replay dataset, normalised, over seeds.

The dataset is made as D4RL made its medium-replay ones: the replay buffer of an online run stopped once its
policy is part-trained, every row it collected (its random warm-up included):

1. the expert: ``rlengine train examples/td3_pendulum.toml`` to its target; its best checkpoint evaluated again
   over ``--reference-episodes`` episodes is the expert reference (normalised 100);
2. random play over as many episodes is the random reference (normalised 0);
3. the medium run: the same example stopped after ``--medium-steps`` env steps, its replay written with
   ``rlengine collect RUN --from-replay`` (``pendulum/medium-replay-v0``);
4. each of ``--algorithms`` trained from it, ``--updates`` updates, seeds ``0..--seeds - 1``, an evaluation of
   10 greedy episodes every ``--eval-every`` updates.

Printed: the references, the dataset's own average return (normalised), and per algorithm each seed's last and
best evaluation, normalised, their mean and std over seeds, and seconds per run.

    nice -n 10 python benchmarks/offline_targets.py [--algorithms td3_bc,iql,bc] [--seeds 3] [--updates 50000]

``--task halfcheetah`` is the HalfCheetah target instead: the "medium" dataset as D4RL made it, ``--episodes``
episodes of a part-trained SAC (the ``sac/HalfCheetah-v5`` preset stopped after ``--medium-steps``, default
50,000) sampling its own actions (``rlengine collect --noise explore``); each algorithm's evaluations are
printed beside the dataset's own average return, the figure to reach.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from typing import Callable

import numpy as np

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "examples", "td3_pendulum.toml")
DATASET = "pendulum/medium-replay-v0"
SAC_HALFCHEETAH = os.path.join(os.path.dirname(__file__), "..", "plugins", "algorithms", "rlengine_algorithms",
                               "presets", "sac_HalfCheetah-v5.toml")
HALFCHEETAH = "halfcheetah/medium-v0"


def rlengine(*argv: str) -> str:
    done = subprocess.run(["rlengine", *argv], capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"rlengine {' '.join(argv)} exited {done.returncode}:\n{done.stdout[-2000:]}"
                         f"\n{done.stderr[-2000:]}")
    return done.stdout


def evaluated(run_dir: str, episodes: int, checkpoint: str = "best") -> float:
    out = rlengine("eval", run_dir, "--checkpoint", checkpoint, "--episodes", str(episodes), "--seed", "1000",
                   "--json")
    return float(json.loads(out.strip().splitlines()[-1])["mean_return"])


def random_return(episodes: int) -> float:
    import gymnasium as gym

    env = gym.make("Pendulum-v1")
    env.action_space.seed(0)
    returns = []
    for i in range(episodes):
        env.reset(seed=1000 + i)
        total, done = 0.0, False
        while not done:
            _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
            total, done = total + float(reward), terminated or truncated
        returns.append(total)
    return float(np.mean(returns))


def eval_returns(run_dir: str) -> list:
    with open(os.path.join(run_dir, "metrics.jsonl")) as rows:
        return [row["eval/average_return"] for row in map(json.loads, rows) if "eval/average_return" in row]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=["pendulum", "halfcheetah"], default="pendulum")
    parser.add_argument("--episodes", type=int, default=100, help="halfcheetah: dataset episodes (1,000 steps)")
    parser.add_argument("--algorithms", default="td3_bc,iql,bc")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--updates", type=int, default=50_000)
    parser.add_argument("--eval-every", type=int, default=10_000)
    parser.add_argument("--medium-steps", type=int, help="env steps of the part-trained run (default: "
                        "3,000 for pendulum, 50,000 for halfcheetah)")
    parser.add_argument("--reference-episodes", type=int, default=50)
    parser.add_argument("--work-dir", help="default: a new temporary directory")
    args = parser.parse_args()
    work = args.work_dir or tempfile.mkdtemp(prefix="offline-targets-")
    os.environ["MINARI_DATASETS_PATH"] = os.path.join(work, "datasets")
    print(f"runs and datasets in {work}", flush=True)
    if args.task == "halfcheetah":
        medium = os.path.join(work, "medium")
        if not os.path.isdir(medium):
            rlengine("train", SAC_HALFCHEETAH, "--root-dir", medium, "--num-env-steps", str(args.medium_steps or 50_000))
            print(rlengine("collect", medium, "--episodes", str(args.episodes), "--noise", "explore", "--out",
                           HALFCHEETAH).strip(), flush=True)
        train_all(args, work, HALFCHEETAH, lambda value: value)
        return

    expert = os.path.join(work, "expert")
    if not os.path.isdir(expert):
        rlengine("train", EXAMPLE, "--root-dir", expert)
    high, low = evaluated(expert, args.reference_episodes), random_return(args.reference_episodes)
    print(f"references over {args.reference_episodes} episodes: expert (TD3's best checkpoint) {high:.1f}, "
          f"random {low:.1f}", flush=True)

    def normalised(value: float) -> float:
        return 100 * (value - low) / (high - low)

    medium = os.path.join(work, "medium")
    if not os.path.isdir(medium):
        rlengine("train", EXAMPLE, "--root-dir", medium, "--num-env-steps", str(args.medium_steps or 3_000),
                 "--set", "train.target_return=0")
        print(rlengine("collect", medium, "--from-replay", "--out", DATASET).strip(), flush=True)
    part = evaluated(medium, args.reference_episodes, "latest")
    print(f"the medium run's policy at {args.medium_steps or 3_000} env steps: {part:.1f} (normalised "
          f"{normalised(part):.1f})", flush=True)

    train_all(args, work, DATASET, normalised)


def train_all(args: argparse.Namespace, work: str, dataset: str, score: Callable[[float], float]) -> None:
    """Each of ``--algorithms`` trained from ``dataset`` on every seed; its evaluations printed as ``score``
    gives them (normalised, or as they are)."""
    per_iteration = min(args.eval_every, 1000)
    for algorithm in args.algorithms.split(","):
        lasts, bests, seconds = [], [], []
        for seed in range(args.seeds):
            run = os.path.join(work, f"{algorithm}-{seed}")
            start = time.monotonic()
            rlengine("train", "--algorithm", algorithm, "--dataset", dataset, "--seed", str(seed), "--root-dir", run,
                     "--num-env-steps", str(args.updates), "--set", f"offline.updates_per_iteration={per_iteration}",
                     "--set", f"train.eval_interval={args.eval_every // per_iteration}")
            seconds.append(time.monotonic() - start)
            returns = [score(r) for r in eval_returns(run)]
            lasts.append(returns[-1])
            bests.append(max(returns))
            print(f"{algorithm} seed {seed}: evaluations {', '.join(f'{r:.1f}' for r in returns)} "
                  f"({seconds[-1]:.0f} s)", flush=True)
        spread = statistics.pstdev(lasts) if len(lasts) > 1 else 0.0
        print(f"{algorithm}: last {statistics.mean(lasts):.1f} +- {spread:.1f}, best {statistics.mean(bests):.1f}, "
              f"{statistics.mean(seconds):.0f} s a run", flush=True)


if __name__ == "__main__":
    main()
