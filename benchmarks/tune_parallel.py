"""The same `rlengine tune` of PPO / CartPole-v1 three ways: trials one after another, `--jobs 2`, `--ray --concurrent 2`.

Each is a fresh `rlengine tune` process into a fresh tune dir, with the same
sampler seed, as a user would type it. Prints each one's wall time (and its
ratio to one after another), its best trial, and the load average around it:
the figures in docs/tune.md ("Trials in parallel").

    python benchmarks/tune_parallel.py [--trials 8] [--budget 4096] [--modes seq,jobs,ray] [--startup-trials N]
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

MODES = {"seq": [], "jobs": ["--jobs", "2"], "ray": ["--ray", "--concurrent", "2"]}


def tune(tune_dir: str, trials: int, budget: int, extra: list, startup: int) -> tuple[float, str]:
    words = ["tune", "--trials", str(trials), "--startup-trials", str(startup), "--seed", "0",
             "--num-env-steps", str(budget), "--set", "train.eval_interval=4",
             "--param", "ppo.learning_rate=loguniform:1e-4:3e-3", "--param", "ppo.num_epochs=int:4:20",
             "--tune-dir", tune_dir, *extra]
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "rlengine.cli", *words], capture_output=True, text=True,
                         check=True).stdout
    best = next((line for line in out.splitlines() if "best trial" in line), "no best trial")
    return time.perf_counter() - start, best.removeprefix("rlengine: tune: ")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=8)
    p.add_argument("--budget", type=int, default=4096)
    p.add_argument("--modes", default="seq,jobs,ray")
    p.add_argument("--startup-trials", type=int, help="random trials first (default: half the trials); all the "
                   "trials: every mode trains the same configs, drawn by trial number")
    a = p.parse_args()
    first = None
    with tempfile.TemporaryDirectory() as root:
        for mode in a.modes.split(","):
            load = os.getloadavg()[0]
            startup = a.trials // 2 if a.startup_trials is None else a.startup_trials
            seconds, best = tune(os.path.join(root, mode), a.trials, a.budget, MODES[mode], startup)
            first = first or seconds
            print(f"{mode:>4}: {seconds:6.1f} s ({seconds / first:.2f}x), load {load:.1f} -> "
                  f"{os.getloadavg()[0]:.1f}; {best}", flush=True)


if __name__ == "__main__":
    main()
