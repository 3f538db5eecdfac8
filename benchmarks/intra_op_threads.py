"""What ``train.intra_op_threads`` does to an iteration: one thread per op against TensorFlow's pool (one per core).

For each job it trains an example in a fresh process per setting (the settings
alternate, ``--repeats`` rounds), with the JSONL writer only and evaluation
off, and prints from ``metrics.jsonl`` the medians per iteration after the
first few (tracing): collection and update milliseconds and env steps per
second between rows. Jobs:

* ``ppo``: examples/ppo_cartpole.toml (8 copies x 32 steps, 20 minibatch updates of 256 rows);
* ``sac``: examples/sac_pendulum.toml (2x256 networks, batch 256, 4 updates per iteration);
* ``dqn``: the dqn/CartPole-v1 preset (64-64 network, 128 updates every 256 env steps);
* ``cnn``: a Nature-CNN gradient on 256 stacked 84x84 frames (a PPO Atari minibatch), in-process timing.

    python benchmarks/intra_op_threads.py [--jobs ppo sac dqn cnn] [--repeats 2] [--settings 1 0]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(os.path.dirname(HERE), "examples")
_TRAIN = "import sys, rlengine; rlengine.Engine(None if sys.argv[1] == '-' else sys.argv[1], sys.argv[2:]).train()"
_CNN = """
import sys, time, statistics, numpy as np, tensorflow as tf
tf.config.threading.set_intra_op_parallelism_threads(int(sys.argv[1]))
frames = tf.constant(np.random.default_rng(0).integers(0, 255, (256, 84, 84, 4), dtype=np.uint8))
shapes = [[8, 8, 4, 32], [4, 4, 32, 64], [3, 3, 64, 64], [3136, 512], [512, 6]]
weights = [tf.Variable(tf.random.normal(s, stddev=0.05)) for s in shapes]

@tf.function
def gradient():
    with tf.GradientTape() as tape:
        h = tf.cast(frames, tf.float32) / 255.0
        for w, stride in zip(weights[:3], (4, 2, 1)):
            h = tf.nn.relu(tf.nn.conv2d(h, w, stride, "VALID"))
        h = tf.nn.relu(tf.reshape(h, [256, -1]) @ weights[3])
        loss = tf.reduce_mean((h @ weights[4]) ** 2)
    return tape.gradient(loss, weights)

gradient()
times = []
for _ in range(5):
    start = time.perf_counter()
    for _ in range(5):
        gradient()
    times.append((time.perf_counter() - start) / 5)
print(statistics.median(times))
"""

JOBS = {  # config, env steps, overrides
    "ppo": (os.path.join(EXAMPLES, "ppo_cartpole.toml"), 25_600, []),
    "sac": (os.path.join(EXAMPLES, "sac_pendulum.toml"), 3_000, []),
    "dqn": ("-", 20_000, ["train.algorithm='dqn'", "train.env='CartPole-v1'"]),
}


def train_job(job: str, threads: int) -> dict:
    config, env_steps, overrides = JOBS[job]
    root = tempfile.mkdtemp(prefix=f"intra-op-{job}-")
    overrides = [*overrides, f"train.num_env_steps={env_steps}", f"train.root_dir={json.dumps(root)}",
                 'train.writers=["jsonl"]', "train.eval_interval=0", "train.checkpoint_seconds=0",
                 f"train.intra_op_threads={threads}"]
    env = {k: v for k, v in os.environ.items() if k != "TF_NUM_INTRAOP_THREADS"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    subprocess.run([sys.executable, "-c", _TRAIN, config, *overrides], check=True, capture_output=True, env=env)
    with open(os.path.join(root, "metrics.jsonl")) as f:
        rows = [json.loads(line) for line in f if '"time/collect"' in line]
    shutil.rmtree(root, ignore_errors=True)
    rows = [r for r in rows if "loss/total" in r or job == "ppo"][5:]  # past warm-up and the traced first calls
    return {"collect": statistics.median(r["time/collect"] for r in rows),
            "update": statistics.median(r["time/update"] for r in rows),
            "steps_per_sec": (rows[-1]["env_steps"] - rows[0]["env_steps"]) / (rows[-1]["wall_time"] - rows[0]["wall_time"])}


def cnn_job(threads: int) -> dict:
    out = subprocess.run([sys.executable, "-c", _CNN, str(threads)], check=True, capture_output=True, text=True,
                         env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    return {"collect": 0.0, "update": float(out.stdout.split()[-1]), "steps_per_sec": 0.0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", nargs="+", default=["ppo", "sac", "dqn", "cnn"], choices=[*JOBS, "cnn"])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--settings", nargs="+", type=int, default=[1, 0], help="0: TensorFlow's choice")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}")
    results: dict = {(job, s): [] for job in args.jobs for s in args.settings}
    for i in range(args.repeats):
        for job in args.jobs:
            for setting in args.settings:
                result = cnn_job(setting) if job == "cnn" else train_job(job, setting)
                results[job, setting].append(result)
                print(f"  #{i + 1} {job} intra_op_threads={setting}: update {1000 * result['update']:.2f} ms", flush=True)
    print(f"\nmedians of {args.repeats}; ms per iteration (cnn: per gradient); 0 = TensorFlow's pool, one per core")
    print(f"{'job':<5} {'threads':>7} {'collect':>8} {'update':>8} {'env steps/s':>12} {'update vs first':>16}")
    for job in args.jobs:
        base = statistics.median(r["update"] for r in results[job, args.settings[0]])
        for setting in args.settings:
            m = {k: statistics.median(r[k] for r in results[job, setting]) for k in results[job, setting][0]}
            print(f"{job:<5} {setting:>7} {1000 * m['collect']:8.2f} {1000 * m['update']:8.2f} "
                  f"{m['steps_per_sec']:12.0f} {m['update'] / base:15.2f}x")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
