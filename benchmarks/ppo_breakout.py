"""PPO with the Nature CNN on ALE/Breakout-v5 (examples/ppo_breakout.toml): the evaluation curve to
``--env-steps`` (default 1M), training env steps/s, and the time 10M env steps would take here.

    python benchmarks/ppo_breakout.py [--env-steps 1000000] [--seed 0] [--root-dir DIR]

The run keeps the example's 10M-step budget, so its linear learning-rate and clip schedules are those
of the Zoo's protocol, and stops at ``--env-steps`` (``Run.request_stop``, a normal finish with a last
checkpoint). Rerunning with the same ``--root-dir`` and a larger ``--env-steps`` continues the same run.
Needs the atari extra (pip install -e "plugins/gym[atari]"). Random play scores about 1.5; the issue's
target is an evaluation return of at least 10 at 1M env steps. One evaluation (8 whole games, raw
score) every ~100k env steps, and one of the last checkpoint at ``--env-steps`` (``rlengine eval``); training time
excludes evaluation.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

_CODE = """
import json, sys
import rlengine

class StopAt:
    @rlengine.hookimpl
    def rlengine_iteration_end(self, run, iteration, metrics):
        if metrics["env_steps"] >= int(sys.argv[1]):
            run.request_stop(f"benchmark budget of {sys.argv[1]} env steps reached")

result = rlengine.Engine("examples/ppo_breakout.toml", sys.argv[2:], extra_plugins=[("stop-at", StopAt())]).train()
print(json.dumps([result.env_steps, result.train_time]))
"""


def eval_rows(root: str) -> list:
    with open(os.path.join(root, "metrics.jsonl")) as f:
        rows = [json.loads(line) for line in f]
    return [(r["env_steps"], r["eval/average_return"], r["eval/std_return"]) for r in rows if "eval/average_return" in r]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--env-steps", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-interval", type=int, default=98, help="iterations (1,024 env steps each)")
    parser.add_argument("--root-dir", default="", help="default: a new temporary dir")
    args = parser.parse_args()
    root = args.root_dir or tempfile.mkdtemp(prefix="rlengine-breakout-")
    start = time.perf_counter()
    overrides = [f"train.seed={args.seed}", f'train.root_dir="{root}"', 'train.writers=["jsonl", "tensorboard"]',
                 f"train.eval_interval={args.eval_interval}"]
    out = subprocess.run([sys.executable, "-c", _CODE, str(args.env_steps), *overrides], check=True,
                         capture_output=True, text=True).stdout
    env_steps, train_time = json.loads(out.strip().splitlines()[-1])
    print(f"PPO nature_cnn ALE/Breakout-v5, seed {args.seed}: {env_steps:,} env steps, {train_time:.0f} s "
          f"training, {time.perf_counter() - start:.0f} s in all (run dir {root})")
    print(f"{'env steps':>10s} {'eval return':>12s} {'std':>6s}")
    rows = eval_rows(root)
    if not rows or rows[-1][0] < env_steps:  # a budget stop between evaluations: evaluate the last checkpoint
        final = json.loads(subprocess.run(["rlengine", "eval", root, "--episodes", "8", "--json"], check=True,
                                          capture_output=True, text=True).stdout.strip().splitlines()[-1])
        rows.append((env_steps, final["mean_return"], final["std_return"]))
    for steps, mean, std in rows:
        print(f"{steps:10,d} {mean:12.1f} {std:6.1f}")
    rate = env_steps / train_time
    print(f"training env steps/s: {rate:.0f}; 10M env steps would take {1e7 / rate / 3600:.1f} h of training here")


if __name__ == "__main__":
    main()
