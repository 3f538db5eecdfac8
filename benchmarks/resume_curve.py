"""SAC on Pendulum-v1 killed (SIGKILL) at half its budget and resumed: with and without the replay buffer.

Each variant trains with ``rlengine train`` in a fresh process, is killed
once a checkpoint past half the budget is complete, and is resumed with the
same command. With ``train.checkpoint_replay = true`` (the default) the
resumed run keeps learning from its restored experience (and, the gym env
being "sync", continues exactly as the never-interrupted run does); with
``false`` it restarts from an empty buffer. Prints the evaluation returns
of the three runs and draws them into one plot.

    python benchmarks/resume_curve.py [--steps 12000] [--out resume_curve.png]
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

from rlengine_tools.plot import plot_runs

from rlengine.run.checkpoints.store import complete_checkpoints

CONFIG = """
[train]
algorithm = "sac"
env = "Pendulum-v1"
num_envs = 1
unroll_length = 4
num_env_steps = {steps}
eval_interval = 125
num_eval_episodes = 5
checkpoint_interval = 125
writers = ["jsonl"]
checkpoint_replay = {replay}
root_dir = "{root}"
seed = 1

[sac]
hidden_sizes = [64, 64]
num_updates_per_iteration = 4
initial_collect_steps = 1000
"""


def train(config_path: str, root: str, env_steps_to_kill_at: int = 0) -> None:
    """``rlengine train`` in a fresh process; SIGKILL once a checkpoint past ``env_steps_to_kill_at`` exists."""
    process = subprocess.Popen([sys.executable, "-m", "rlengine.cli", "train", config_path],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    while env_steps_to_kill_at and process.poll() is None:
        found = complete_checkpoints(os.path.join(root, "checkpoints"))
        if found and found[0][2]["env_steps"] >= env_steps_to_kill_at:
            os.killpg(process.pid, signal.SIGKILL)
            break
        time.sleep(0.05)
    process.wait()


def evaluations(root: str) -> list:
    with open(os.path.join(root, "metrics.jsonl")) as f:
        return [(r["env_steps"], r["eval/average_return"]) for r in map(json.loads, f) if "eval/average_return" in r]


def run_variant(base: str, name: str, steps: int, replay: bool, interrupt: bool) -> str:
    """Train one variant into ``base/name`` (its label in the plot); returns that root dir."""
    directory = os.path.join(base, f"{name}-config")
    os.makedirs(directory)
    config_path = os.path.join(directory, "sac.toml")
    root = os.path.join(base, name)
    with open(config_path, "w") as f:
        f.write(CONFIG.format(steps=steps, replay=str(replay).lower(), root=root))
    if interrupt:
        train(config_path, root, env_steps_to_kill_at=steps // 2)
    train(config_path, root)  # the same command resumes
    return root


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=12_000)
    p.add_argument("--out", default="resume_curve.png")
    args = p.parse_args()
    base = tempfile.mkdtemp(prefix="rlengine-resume-curve-")
    variants = {"never-interrupted": (True, False), "killed-resumed-with-replay": (True, True),
                "killed-resumed-checkpoint_replay-false": (False, True)}
    roots = []
    for name, (replay, interrupt) in variants.items():
        roots.append(run_variant(base, name, args.steps, replay, interrupt))
        print(f"{name}: " + ", ".join(f"{s}: {r:.0f}" for s, r in evaluations(roots[-1])))
    plot_runs(roots, args.out)  # what `rlengine plot ROOT_DIR... --out` draws
    print(f"plot: {args.out} (runs in {base})")


if __name__ == "__main__":
    main()
