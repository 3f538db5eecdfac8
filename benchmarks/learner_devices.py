"""The learner on one device against two (``train.learner_devices``): SAC on Pendulum-v1, updates per second.

Each run is a fresh process that splits the CPU into two logical devices first (TensorFlow
fixes its devices when it starts), then trains ``examples/sac_pendulum.toml`` (writers: jsonl;
evaluation off) with its learner on ``/CPU:0`` alone or on ``/CPU:0`` and ``/CPU:1``, the
minibatch ``--batch`` rows either way. From ``metrics.jsonl`` after warm-up it prints the
median update time per iteration and the updates per second. Variants interleave, so the
ratio is from one run of the machine. Two logical CPUs share the machine's cores: this measures
what splitting a minibatch costs or gains here, not what two GPUs would give.

    python benchmarks/learner_devices.py [--env-steps 3000] [--batch 256] [--repeats 2]
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
_CODE = """
import sys
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
import rlengine
rlengine.Engine(sys.argv[1], sys.argv[2:]).train()
"""
DEVICES = {"one device": '["/CPU:0"]', "two devices": '["/CPU:0", "/CPU:1"]'}


def run_once(devices: str, env_steps: int, batch: int) -> dict:
    """One training run in a fresh process; its median update time and updates per second."""
    root = tempfile.mkdtemp(prefix="learner-devices-")
    overrides = [f"train.num_env_steps={env_steps}", f"train.root_dir={json.dumps(root)}", 'train.writers=["jsonl"]',
                 "train.eval_interval=0", "train.checkpoint_seconds=0", f"train.learner_devices={devices}",
                 f"sac.mini_batch_size={batch}"]
    run_in_checkout(None, [sys.executable, "-c", _CODE, EXAMPLE, *overrides])
    with open(os.path.join(root, "metrics.jsonl")) as f:
        rows = [json.loads(line) for line in f if '"time/update"' in line and '"loss/total"' in line][5:]
    update = statistics.median(r["time/update"] for r in rows)
    updates = rows[-1]["env_steps"] - rows[0]["env_steps"]  # one update per env step
    return {"update": update, "updates_per_sec": updates / sum(r["time/update"] for r in rows[1:])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env-steps", type=int, default=3000)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}")
    results = interleaved(DEVICES, args.repeats, lambda devices: run_once(devices, args.env_steps, args.batch),
                          lambda result: f"{result['updates_per_sec']:.0f} updates/s")
    print(f"\nSAC Pendulum-v1, minibatch {args.batch}, median of {args.repeats} run(s):")
    print(f"{'learner':<12} {'update ms/iteration':>20} {'updates/s':>10}")
    for name, runs in results.items():
        update = statistics.median(r["update"] for r in runs)
        rate = statistics.median(r["updates_per_sec"] for r in runs)
        print(f"{name:<12} {1000 * update:20.2f} {rate:10.0f}")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
