"""Memory of many runs in one process: short PPO CartPole-v1 runs trained one after another, as
`rlengine tune` trains its trials (and the tests their runs) in one process.

Each run is a real one (``rlengine.Engine(...).train()``) into a fresh temporary root dir: the embedded
PPO config, ``--env-steps`` env steps, an evaluation every 4 iterations, checkpoints, and the
TensorBoard and JSON-lines writers (the console writer only adds output). After each run, once
``gc.collect()`` ran, the script reads the process's RSS (``VmRSS`` of ``/proc/self/status``), the
functions registered on TensorFlow's eager context (each traced graph a run called is one, its loops'
and branches' bodies more) and the objects the garbage collector tracks. It prints them after the runs
of ``--report`` and the mean growth per run from the first reported run past the warm-up (the 10th) to
the last. Target: RSS growth per run <= 2 MiB after the tenth run.

    python benchmarks/memory_runs.py [--runs 50] [--env-steps 2048] [--report 1,10,50]
"""

import argparse
import gc
import shutil
import sys
import tempfile
import time

import tensorflow as tf
from replay_memory import rss_bytes
from tensorflow.python.eager import context

import rlengine

WARM_UP = 10  # runs before the growth is averaged: the first ones also fill caches that stop growing


def rss_mib() -> float:
    """The process's resident set, from ``/proc/self/status`` (Linux)."""
    return rss_bytes() / 2**20


def context_functions() -> int:
    """How many functions TensorFlow's eager context holds (traced graphs not yet released)."""
    return len(context.context().list_function_names())


def train_one(env_steps: int) -> float:
    """Train one short run into a temporary root dir (removed afterwards); its wall time in seconds."""
    root = tempfile.mkdtemp(prefix="rlengine-memory-")
    t0 = time.perf_counter()
    try:
        rlengine.Engine(None, [f"train.num_env_steps={env_steps}", "train.eval_interval=4",
                               f'train.root_dir="{root}"', 'train.writers=["tensorboard", "jsonl"]']).train()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--env-steps", type=int, default=2048, help="env steps per run (256 per iteration)")
    parser.add_argument("--report", default="1,10,50", help="runs after which the figures are printed")
    args = parser.parse_args()
    # each run traces its own functions, which TensorFlow's retracing warning counts as one function
    # retraced again and again from the fifth run on
    tf.get_logger().setLevel("ERROR")
    report = sorted({int(n) for n in args.report.split(",") if 0 < int(n) <= args.runs} | {args.runs})
    print(f"{args.runs} runs of PPO CartPole-v1, {args.env_steps} env steps each, in one process "
          f"(before the first: RSS {rss_mib():.1f} MiB)")
    print(f"{'run':>4} {'RSS MiB':>9} {'context functions':>18} {'gc objects':>11} {'last run s':>11}")
    figures = {}
    for n in range(1, args.runs + 1):
        seconds = train_one(args.env_steps)
        gc.collect()
        figures[n] = (rss_mib(), context_functions(), len(gc.get_objects()))
        if n in report:
            rss, functions, objects = figures[n]
            print(f"{n:>4} {rss:>9.1f} {functions:>18} {objects:>11} {seconds:>11.1f}", flush=True)
    first = min(WARM_UP, args.runs)
    if args.runs > first:
        runs = args.runs - first
        (rss0, fn0, obj0), (rss1, fn1, obj1) = figures[first], figures[args.runs]
        print(f"growth per run over runs {first}-{args.runs}: RSS {(rss1 - rss0) / runs:.2f} MiB, "
              f"context functions {(fn1 - fn0) / runs:.1f}, gc objects {(obj1 - obj0) / runs:.0f} "
              f"(target: RSS <= 2 MiB)")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
