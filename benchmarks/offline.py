"""Offline training throughput: gradient updates per second of bc, td3_bc, iql and cql, with their defaults.

The dataset is Pendulum-sized (3 float observations, 1 action in [-2, 2]; 200-step episodes), made here by
random play on Pendulum-v1 (the rows' values do not change an update's cost). Each algorithm trains
from it through the offline pipeline in this process, with its own defaults ([256, 256] networks, batches
of 256); the first iteration (tracing) is left out, and updates per second are the updates of the
others over their ``time/update`` (the learner's time, not the trainer's bookkeeping around it).

Take it under ``flock /tmp/bench.lock`` on a shared machine::

    flock /tmp/bench.lock python benchmarks/offline.py [--episodes 50] [--updates 200] [--iterations 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile

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


def make_dataset(episodes: int) -> None:
    import gymnasium as gym
    from rlengine_offline.recording import record_episodes, write_dataset

    env = gym.make("Pendulum-v1")
    env.action_space.seed(0)
    buffers, _ = record_episodes(env, lambda _: env.action_space.sample(), episodes, 0)
    write_dataset(DATASET, env, buffers, "random", f"{episodes} episodes of random play")


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
    args = parser.parse_args()
    os.environ["MINARI_DATASETS_PATH"] = tempfile.mkdtemp(prefix="offline-bench-datasets-")
    make_dataset(args.episodes)
    print(f"dataset: {args.episodes * 200} rows of Pendulum-v1 random play; {args.updates} updates per iteration, "
          f"median of {args.iterations} iterations after the first")
    for algorithm in args.algorithms.split(","):
        print(f"{algorithm:7s} {updates_per_second(algorithm, args.updates, args.iterations):8.1f} updates/s",
              flush=True)


if __name__ == "__main__":
    main()
