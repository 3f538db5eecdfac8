"""Where a short off-policy iteration spends its time: SAC on Pendulum-v1, 4 env steps and 4 updates each.

Trains ``examples/sac_pendulum.toml`` (writers: jsonl; evaluation off) in a
fresh process per run, and from its ``metrics.jsonl`` rows after warm-up
prints, per iteration (median): the wall time between two rows, the
collection and update times the pipeline reports, and the rest (the
trainer's own work: episode statistics, metrics, the writer, hooks); then
env steps per second over those iterations (one update per env step).

``--before DIR`` runs the same, interleaved, with the core and plugins of a
checkout in ``DIR`` (e.g. ``git worktree add /tmp/before HEAD~1``): a
before/after figure from one run of the machine.

``--set KEY=VALUE`` (repeatable) adds a config override to every run, after the
benchmark's own, e.g. ``--set 'sac.hidden_matmul_dtype="bfloat16"'`` (with ``--before``,
only keys the older checkout knows).

    python benchmarks/offpolicy_iteration.py [--env-steps 3000] [--repeats 2] [--before DIR] [--set KEY=VALUE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile

from runs import interleaved, run_in_checkout

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(os.path.dirname(HERE), "examples", "sac_pendulum.toml")
_CODE = ("import sys, rlengine; rlengine.Engine(sys.argv[1], sys.argv[2:]).train()")


def run_once(core: str | None, env_steps: int, extra: list) -> dict:
    """One training run in a fresh process (the code of the checkout ``core`` if given); its per-iteration figures."""
    root = tempfile.mkdtemp(prefix="offpolicy-iteration-")
    overrides = [f"train.num_env_steps={env_steps}", f"train.root_dir={json.dumps(root)}", 'train.writers=["jsonl"]',
                 "train.eval_interval=0", "train.checkpoint_seconds=0", *extra]
    run_in_checkout(core, [sys.executable, "-c", _CODE, EXAMPLE, *overrides])
    with open(os.path.join(root, "metrics.jsonl")) as f:
        rows = [json.loads(line) for line in f if '"time/collect"' in line]
    trained = [r for r in rows if "loss/total" in r][5:]  # after warm-up, past the first traced calls
    walls = [b["wall_time"] - a["wall_time"] for a, b in zip(trained, trained[1:])]
    collect = [r["time/collect"] for r in trained[1:]]
    update = [r["time/update"] for r in trained[1:]]
    steps = trained[-1]["env_steps"] - trained[0]["env_steps"]
    return {"wall": statistics.median(walls), "collect": statistics.median(collect),
            "update": statistics.median(update),
            "rest": statistics.median(w - c - u for w, c, u in zip(walls, collect, update)),
            "steps_per_sec": steps / (trained[-1]["wall_time"] - trained[0]["wall_time"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env-steps", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--before", help="a checkout whose core and plugins run as 'before'")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a config override")
    args = parser.parse_args()
    variants = {"this": None, **({"before": os.path.abspath(args.before)} if args.before else {})}
    print(f"load average before: {os.getloadavg()}")
    results = interleaved(variants, args.repeats, lambda core: run_once(core, args.env_steps, args.set),
                          lambda result: f"{result['steps_per_sec']:.0f} env steps/s")
    print(f"\nSAC Pendulum-v1, 4 env steps + 4 updates per iteration, median of {args.repeats} run(s), "
          "ms per iteration:")
    print(f"{'variant':<8} {'wall':>7} {'collect':>8} {'update':>7} {'rest':>6} {'env steps/s':>12}")
    for name, runs in results.items():
        m = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        print(f"{name:<8} {1000 * m['wall']:7.2f} {1000 * m['collect']:8.2f} {1000 * m['update']:7.2f} "
              f"{1000 * m['rest']:6.2f} {m['steps_per_sec']:12.0f}")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
