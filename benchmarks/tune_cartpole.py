"""`rlengine tune` on PPO / CartPole-v1 at small budgets, then the best config at a normal budget.

Runs, as a user would (fresh processes, the `rlengine` command line):

1. `rlengine tune` of five PPO keys, `--trials` trials of `--budget` env steps
   each (an evaluation every 16 iterations = 4096 steps, objective: the mean
   of the last 3). With `--interrupt-after S` the tune gets SIGINT after S
   seconds (as Ctrl-C would), then the same command resumes it; the script
   checks that the trials finished before the interruption were not redone.
2. `rlengine train TUNE_DIR/best.toml --num-env-steps 200000` for each of
   `--check-seeds` seeds: whether and when the best config reaches 475 (the
   target best.toml keeps from the embedded config).

Prints the trial table, the number pruned, the times, and the check.

    python benchmarks/tune_cartpole.py [--trials 20] [--budget 20480] [--interrupt-after 60] [--check-seeds 3]
"""

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time

import optuna
from rlengine_optuna import study as studies

PARAMS = ["ppo.learning_rate=loguniform:1e-4:3e-3", "ppo.num_epochs=int:4:20", "ppo.gamma=float:0.95:0.999",
          "ppo.gae_lambda=float:0.8:0.99", "ppo.clip_range=float:0.1:0.3"]
RLENGINE = [sys.executable, "-m", "rlengine.cli"]


def tune_command(tune_dir: str, trials: int, budget: int) -> list:
    words = ["tune", "--trials", str(trials), "--num-env-steps", str(budget), "--tune-dir", tune_dir, "--seed", "0",
             "--set", 'train.writers=["jsonl"]', "--set", "train.eval_interval=16"]
    for param in PARAMS:
        words += ["--param", param]
    return RLENGINE + words


def load(tune_dir: str) -> optuna.Study:
    storage = studies.open_storage(tune_dir)
    return optuna.load_study(study_name=studies.STUDY_NAME, storage=storage)


def finished(study: optuna.Study) -> dict:
    """Trial number -> (state, value) of the trials that count towards --trials."""
    return {t.number: (t.state.name, t.value) for t in study.trials if t.state in studies.FINISHED}


def run_tune(command: list, interrupt_after: float) -> tuple:
    """Run the tune (SIGINT after ``interrupt_after`` s if > 0); ``(exit status, output, seconds)``."""
    t0 = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if interrupt_after > 0:
        try:
            process.wait(timeout=interrupt_after)
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGINT)
    out = process.communicate()[0]
    return process.returncode, out, time.perf_counter() - t0


def interrupted_then_resumed(command: list, tune_dir: str, interrupt_after: float) -> tuple:
    status, out, seconds = run_tune(command, interrupt_after)
    print(f"first session: exit {status} after {seconds:.0f} s; its last lines:")
    print("\n".join("  " + line for line in out.strip().splitlines()[-3:]))
    before = finished(load(tune_dir))
    status, out, more = run_tune(command, 0)
    after = finished(load(tune_dir))
    kept = all(after.get(n) == v for n, v in before.items())
    redone = sum(1 for line in out.splitlines() if line.startswith("rlengine: tune: trial ") and " of " in line)
    print(f"resumed session: exit {status} after {more:.0f} s; {len(before)} trials finished before the interrupt "
          f"were {'kept as they were' if kept else 'CHANGED'}; it ran {redone} trials (the interrupted one again, "
          "then the rest)")
    return status, out, seconds + more


def check_best(best: str, seeds: int) -> None:
    for seed in range(seeds):
        root = tempfile.mkdtemp(prefix=f"tune-best-{seed}-")
        t0 = time.perf_counter()
        subprocess.run(RLENGINE + ["train", best, "--num-env-steps", "200000", "--seed", str(seed), "--root-dir", root],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        rows = [json.loads(line) for line in open(os.path.join(root, "metrics.jsonl"))]
        evals = [(r["env_steps"], r["eval/average_return"]) for r in rows if "eval/average_return" in r]
        hit = next(((s, r) for s, r in evals if r >= 475), None)
        what = f"reached 475 at {hit[0]} env steps" if hit else f"did NOT reach 475 (best {max(r for _, r in evals)})"
        print(f"best config, seed {seed}: {what}; {time.perf_counter() - t0:.0f} s in all")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--budget", type=int, default=20480, help="env steps per trial")
    parser.add_argument("--interrupt-after", type=float, default=0, help="SIGINT after this many seconds, then resume")
    parser.add_argument("--check-seeds", type=int, default=3)
    parser.add_argument("--tune-dir", default="")
    args = parser.parse_args()
    tune_dir = args.tune_dir or tempfile.mkdtemp(prefix="tune-cartpole-")
    command = tune_command(tune_dir, args.trials, args.budget)
    if args.interrupt_after > 0:
        status, out, seconds = interrupted_then_resumed(command, tune_dir, args.interrupt_after)
    else:
        status, out, seconds = run_tune(command, 0)
    table = out[out.index("trial  state"):] if "trial  state" in out else out[-3000:]
    print(table)
    if status != 0:
        sys.exit(f"rlengine tune exited with {status}")
    study = load(tune_dir)
    pruned = [t for t in study.trials if t.state.name == "PRUNED"]
    steps = sum(t.user_attrs.get("env_steps", 0) for t in study.trials)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # KiB on Linux
    print(f"peak memory of a tune process: {peak:.0f} MiB")
    diverged = sum("diverged" in t.user_attrs.get("reason", "") for t in pruned)
    print(f"{len(study.trials)} trials, {len(pruned)} pruned ({diverged} diverged); {steps} env steps trained "
          f"({args.trials * args.budget} without pruning); tune wall time {seconds:.0f} s")
    check_best(os.path.join(tune_dir, "best.toml"), args.check_seeds)


if __name__ == "__main__":
    main()
