"""Offline training throughput: gradient updates per second of bc, td3_bc, iql and cql, with their defaults.

The dataset is Pendulum-sized (3 float observations, 1 action in [-2, 2]; 200-step episodes), made here by
random play on Pendulum-v1 (the rows' values do not change an update's cost). Each algorithm trains
from it through the offline pipeline in this process, with its own defaults ([256, 256] networks, batches
of 256); the first iteration (tracing) is left out, and updates per second are the updates of the
others over their ``time/update`` (the learner's time, not the trainer's bookkeeping around it).

Take it under ``flock /tmp/bench.lock`` on a shared machine::

    flock /tmp/bench.lock python benchmarks/offline.py [--episodes 50] [--updates 200] [--iterations 3]

With ``--d3rlpy-python PYTHON`` (an interpreter with d3rlpy installed, see ``benchmarks/d3rlpy_td3_bc.py``) it
measures TD3+BC only, against d3rlpy's on the same rows and batch size, the two alternating ``--trials`` times,
each trial a fresh process; d3rlpy's time is its ``fitter``'s per block of updates (sampling included), which is
also what ``time/update`` covers here (the offline pipeline samples inside its update loop).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np

from rlengine import hookimpl

ALGORITHMS = ("bc", "td3_bc", "iql", "cql")
DATASET = "bench/pendulum-random-v0"


class UpdateTimes:
    """``time/update`` of every iteration of the run in progress."""

    def __init__(self):
        self.seconds: list = []

    @hookimpl
    def rlengine_iteration_end(self, run, iteration, metrics):
        if "time/update" in metrics:
            self.seconds.append(float(metrics["time/update"]))


def make_dataset(episodes: int) -> list:
    """Records the dataset ``DATASET``; returns its episode buffers."""
    import gymnasium as gym
    from rlengine_offline.recording import record_episodes, write_dataset

    env = gym.make("Pendulum-v1")
    env.action_space.seed(0)
    buffers, _ = record_episodes(env, lambda _: env.action_space.sample(), episodes, 0)
    write_dataset(DATASET, env, buffers, "random", f"{episodes} episodes of random play")
    return buffers


def save_rows(buffers: list, path: str) -> None:
    """The episodes as d3rlpy's ``MDPDataset`` takes them: one row per step, its last observation dropped."""
    def column(name: str):
        return [getattr(b, name)[:len(b.rewards)] if name == "observations" else getattr(b, name) for b in buffers]

    np.savez(path, observations=np.concatenate(column("observations")), actions=np.concatenate(column("actions")),
             rewards=np.concatenate(column("rewards")), terminals=np.concatenate(column("terminations")),
             timeouts=np.concatenate(column("truncations")))


def d3rlpy_updates_per_second(python: str, data: str, updates: int, iterations: int) -> float:
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "d3rlpy_td3_bc.py")
    out = subprocess.run([python, script, "--data", data, "--updates", str(updates), "--blocks", str(iterations)],
                         check=True, capture_output=True, text=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    return updates / statistics.median(result["block_s"])


def updates_per_second(algorithm: str, updates: int, iterations: int) -> float:
    import rlengine

    times = UpdateTimes()
    raw = {"train": {"algorithm": algorithm, "dataset": DATASET, "num_env_steps": updates * (iterations + 1),
                     "eval_interval": 0, "checkpoint_interval": 0, "writers": [],
                     "root_dir": tempfile.mkdtemp(prefix=f"offline-{algorithm}-")},
           "offline": {"updates_per_iteration": updates}}
    rlengine.Engine(raw, extra_plugins=[("update-times", times)]).train()
    measured = times.seconds[1:]  # the first iteration traces the update
    return updates / statistics.median(measured)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=50, help="dataset episodes of 200 steps")
    parser.add_argument("--updates", type=int, default=200, help="updates per iteration")
    parser.add_argument("--iterations", type=int, default=3, help="iterations measured after the first")
    parser.add_argument("--algorithms", default=",".join(ALGORITHMS))
    parser.add_argument("--d3rlpy-python", help="an interpreter with d3rlpy: TD3+BC side by side with it")
    parser.add_argument("--trials", type=int, default=3, help="alternating trials of each, with --d3rlpy-python")
    args = parser.parse_args()
    os.environ["MINARI_DATASETS_PATH"] = tempfile.mkdtemp(prefix="offline-bench-datasets-")
    buffers = make_dataset(args.episodes)
    print(f"dataset: {args.episodes * 200} rows of Pendulum-v1 random play; {args.updates} updates per iteration, "
          f"median of {args.iterations} iterations after the first")
    if args.d3rlpy_python:
        side_by_side(args, buffers)
        return
    for algorithm in args.algorithms.split(","):
        print(f"{algorithm:7s} {updates_per_second(algorithm, args.updates, args.iterations):8.1f} updates/s",
              flush=True)


def side_by_side(args: argparse.Namespace, buffers: list) -> None:
    """TD3+BC here and in d3rlpy, alternating, each trial a fresh process (this one's engine is built anew)."""
    data = os.path.join(tempfile.mkdtemp(prefix="offline-bench-rows-"), "rows.npz")
    save_rows(buffers, data)
    ours, theirs = [], []
    for trial in range(args.trials):
        ours.append(fresh_process_updates_per_second(args))
        theirs.append(d3rlpy_updates_per_second(args.d3rlpy_python, data, args.updates, args.iterations))
        print(f"trial {trial}: rlengine {ours[-1]:8.1f}, d3rlpy {theirs[-1]:8.1f} updates/s "
              f"({ours[-1] / theirs[-1]:.2f}x)", flush=True)
    print(f"td3_bc median: rlengine {statistics.median(ours):.1f}, d3rlpy {statistics.median(theirs):.1f} "
          f"updates/s: {statistics.median(ours) / statistics.median(theirs):.2f}x")


def fresh_process_updates_per_second(args: argparse.Namespace) -> float:
    code = ("import os, sys; sys.argv = ['offline.py']; sys.path.insert(0, {here!r}); import offline; "
            "print(offline.updates_per_second('td3_bc', {u}, {i}))").format(
        here=os.path.dirname(os.path.abspath(__file__)), u=args.updates, i=args.iterations)
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                         env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")).stdout
    return float(out.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
