"""One learner process against two learner workers (``train.learner_workers``): PPO CartPole-v1, the demo.

Each worker is a fresh ``rlengine train`` process on a port of this machine, as a user starts them;
each collects its own ``--env-steps`` and every update averages both workers' gradients (one
all-reduce of the packed gradients and losses). From each run's ``metrics.jsonl`` it prints the
median update time of an iteration (``time/update``) and the env steps per second of the whole
run (its own steps over its training time); with two workers, also the two together. Variants
alternate, ``--repeats`` times, so the ratio is from one run of the machine. On this 2-core CPU
the two workers share the cores: the figure is what the gradients' exchange costs, not a speed-up.

    python benchmarks/learner_workers.py [--env-steps 16384] [--repeats 2]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import tempfile


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def run(workers: int, env_steps: int) -> dict:
    """A run of ``workers`` processes (1: a plain run); each one's update time and env steps per second."""
    root = tempfile.mkdtemp(prefix="learner-workers-")
    common = ["rlengine", "train", "--root-dir", os.path.join(root, "run"), "--num-env-steps", str(env_steps),
              "--set", "train.eval_interval=0", "--set", "train.checkpoint_seconds=0", "--set",
              'train.writers=["jsonl"]']
    addresses = json.dumps([f"localhost:{free_port()}" for _ in range(workers)])
    commands = [common] if workers == 1 else [
        [*common, "--set", f"train.learner_workers={addresses}", "--set", f"train.worker_index={i}"]
        for i in range(workers)]
    processes = [subprocess.Popen(c, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for c in commands]
    for p in processes:
        if p.wait(timeout=1800):
            raise SystemExit(f"a worker exited {p.returncode}: {p.stderr.read()[-2000:]}")
    dirs = [os.path.join(root, "run")] + [os.path.join(root, f"run-worker-{i}") for i in range(1, workers)]
    return {"update": [update_time(d) for d in dirs], "steps_per_sec": [steps_per_sec(d) for d in dirs]}


def rows(run_dir: str) -> list:
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        return [json.loads(line) for line in f if '"time/update"' in line]


def update_time(run_dir: str) -> float:
    return statistics.median(r["time/update"] for r in rows(run_dir)[3:])


def steps_per_sec(run_dir: str) -> float:
    last = rows(run_dir)[-1]
    return last["env_steps"] / last["time/training"] if "time/training" in last else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env-steps", type=int, default=16384, help="each process's budget")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}", flush=True)
    for repeat in range(args.repeats):
        for workers in (1, 2):
            result = run(workers, args.env_steps)
            updates = ", ".join(f"{1000 * u:.1f}" for u in result["update"])
            speeds = result["steps_per_sec"]
            together = f", together {sum(speeds):,.0f}" if workers > 1 else ""
            print(f"repeat {repeat}, {workers} process{'es' * (workers > 1)}: update ms per iteration {updates}; "
                  f"env steps/s {', '.join(f'{s:,.0f}' for s in speeds)}{together}", flush=True)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
