"""Where `rlengine train` spends its start-up: seconds per phase, from the process's start to the end of the first
iteration, as the run reports them (``startup/<phase>`` on the first row of metrics.jsonl; docs/cli.md).

Runs the whole command (default: PPO on CartPole-v1, eval off, 2,560 env steps) ``--runs`` times, each in a fresh
process, and prints each run's phases, the median of each, and the whole command's wall time. With
``--keras3-too`` every run is paired with one that lets TensorFlow import Keras 3 as well
(``TF_USE_LEGACY_KERAS=0``, what rlengine did before it set the default), alternating, so the import cut shows
as a ratio from one run.

    python benchmarks/startup.py [--runs 5] [--keras3-too] [-- extra rlengine train arguments]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

PHASES = ("imports", "config", "build", "restore", "first_iteration", "total")


def one_command(extra: list, env: dict) -> tuple[float, dict]:
    """The wall time of one `rlengine train` and the ``startup/`` figures of its first row."""
    root = tempfile.mkdtemp(prefix="rlengine-startup-")
    command = [sys.executable, "-m", "rlengine.cli", "train", "--root-dir", root, "--num-env-steps", "2560",
               "--set", "train.eval_interval=0", "--set", 'train.writers=["jsonl"]', *extra]
    t0 = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env={**os.environ, **env})
    wall = time.perf_counter() - t0
    with open(os.path.join(root, "metrics.jsonl")) as f:
        first = json.loads(f.readline())
    return wall, {phase: first.get(f"startup/{phase}", float("nan")) for phase in PHASES}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--keras3-too", action="store_true")
    parser.add_argument("extra", nargs="*", help="more `rlengine train` arguments (after --)")
    args = parser.parse_args()
    variants = {"default": {}}
    if args.keras3_too:
        variants["keras3"] = {"TF_USE_LEGACY_KERAS": "0"}
    results: dict = {name: [] for name in variants}
    print("run  variant   " + "  ".join(f"{p:>15s}" for p in PHASES) + "  command_s")
    for run in range(args.runs):
        for name, env in variants.items():
            wall, phases = one_command(args.extra, env)
            results[name].append((wall, phases))
            print(f"{run:3d}  {name:8s}  " + "  ".join(f"{phases[p]:15.2f}" for p in PHASES) + f"  {wall:9.2f}",
                  flush=True)
    print("medians:")
    for name, rows in results.items():
        medians = [statistics.median(r[1][p] for r in rows) for p in PHASES]
        wall = statistics.median(r[0] for r in rows)
        print(f"     {name:8s}  " + "  ".join(f"{m:15.2f}" for m in medians) + f"  {wall:9.2f}")
    if args.keras3_too:
        imports = {n: statistics.median(r[1]["imports"] for r in rows) for n, rows in results.items()}
        print(f"imports, default / keras3: {imports['default']:.2f} / {imports['keras3']:.2f} s "
              f"= {imports['default'] / imports['keras3']:.2f}")


if __name__ == "__main__":
    main()
