"""Where an off-policy update's time goes, op by op: matmuls against everything else.

Builds an off-policy example (default ``examples/sac_pendulum.toml``, writers
off), fills its replay buffer with random transitions, times ``--updates``
updates in one learner call, then runs the same call once more under
TensorFlow's profiler and sums the time each op kernel ran, per update:

* wall: milliseconds per update, unprofiled;
* core time in matmul kernels, split into the large ones (at least
  ``LARGE_MATMUL_MS`` each: the hidden layers at batch size) and the small
  ones (input and output layers);
* core time in every other kernel (activations, losses, optimizer steps,
  replay sampling, the NaN guard), and the number of op runs an update;
* a large matmul kernel's average time, next to one 256x256 matmul at batch
  256 timed alone (a chain of dependent ones);
* how full the cores were: all kernel time over the profiled call's wall
  time x cores. The profiler records the kernels it times (at its default
  level); ops cheap enough to run inline may not all appear, so the op runs
  are a lower bound.

With every matmul running at one core's peak and the cores kept full, the
large matmuls' core time over the number of cores is the least time an update
can take in this precision; the rest of the kernels' time is what fusing or
dropping ops could still win. One process, so run it on a quiet machine::

    python benchmarks/update_profile.py [--config examples/sac_pendulum.toml] [--updates 100] [--set KEY=VALUE]
"""

from __future__ import annotations

import argparse
import glob
import os
import tempfile
import time

import tensorflow as tf

from rlengine.config import apply_overrides, build_config, read_toml
from rlengine.plugin.manager import build_plugins
from rlengine.run.build import build_components, config_classes

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(os.path.dirname(HERE), "examples", "sac_pendulum.toml")
WARMUP_ENV_STEPS = 2000
#: a matmul kernel that runs at least this long (ms) counts as a hidden layer's
LARGE_MATMUL_MS = 0.1
#: kernels that only run other kernels (their time is their contents')
CONTAINER_OPS = {"While", "StatelessWhile", "If", "StatelessIf", "Case", "PartitionedCall",
                 "StatefulPartitionedCall"}


def build_learner(config: str, overrides: list):
    """The example's components with a replay buffer holding ``WARMUP_ENV_STEPS`` random steps."""
    plugins = build_plugins()
    raw = apply_overrides(read_toml(config), ["train.writers=[]", *overrides])
    parts = build_components(build_config(raw, config_classes(plugins)), plugins, tempfile.mkdtemp())
    if not parts.algorithm.off_policy:
        parts.close()
        raise SystemExit(f"{config}: {type(parts.algorithm).__name__} is not off-policy, and this benchmark profiles "
                         "updates from a replay buffer; give an off-policy example (sac, td3, dqn)")
    pipeline = parts.pipeline
    pipeline.start()
    per_iteration = pipeline.collector.unroll_length * pipeline.collector.batch
    for _ in range(WARMUP_ENV_STEPS // per_iteration):
        pipeline.iterate(0)  # 0 env steps so far: warming up, random actions, no update
    return parts


def is_matmul(op_type: str) -> bool:
    """MatMul, BatchMatMulV2, oneDNN's _MklMatMul and _MklNativeFusedMatMul (matmul + bias + activation), ..."""
    return "MatMul" in op_type


def kernel_split(logdir: str, updates: int) -> dict:
    """Per update, from the profile in ``logdir``: core ms in large matmuls, small matmuls and other kernels,
    and the op runs of each kind."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2  # TensorFlow's own trace format

    space = xplane_pb2.XSpace()
    with open(glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True)[0], "rb") as f:
        space.ParseFromString(f.read())
    split = {kind: [0.0, 0] for kind in ("large matmuls", "small matmuls", "other kernels")}
    for plane in space.planes:
        for line in plane.lines:
            if not line.name.startswith("tf_Compute"):  # the executor's threads; the python line holds calls
                continue
            for event in line.events:
                name = plane.event_metadata[event.metadata_id].name
                node, _, op_type = name.rpartition(":")
                if not node or "::" in name or op_type in CONTAINER_OPS:
                    continue
                ms = event.duration_ps / 1e9
                kind = "other kernels"
                if is_matmul(op_type):
                    kind = "large matmuls" if ms >= LARGE_MATMUL_MS else "small matmuls"
                split[kind][0] += ms / updates
                split[kind][1] += 1 / updates
    return split


def one_matmul_ms(size: int = 256, chain: int = 50, calls: int = 20) -> float:
    """Milliseconds of one ``[size, size] @ [size, size]`` matmul when it runs alone: a chain of dependent ones,
    so no two overlap (TensorFlow does not split a matmul this small across threads)."""
    x, w = tf.random.normal([size, size]), tf.random.normal([size, size]) * (1 / size) ** 0.5

    @tf.function
    def run(x):
        for _ in range(chain):
            x = tf.matmul(x, w)
        return x

    run(x).numpy()
    start = time.perf_counter()
    for _ in range(calls):
        out = run(x)
    out.numpy()
    return (time.perf_counter() - start) * 1e3 / (calls * chain)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default=EXAMPLE)
    parser.add_argument("--updates", type=int, default=100)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    parts = build_learner(args.config, args.set)
    count = tf.constant(args.updates)
    train = parts.learner.train_from_replay
    train(count)["loss/total"].numpy()  # trace and warm up
    walls = []
    for _ in range(3):
        start = time.perf_counter()
        train(count)["loss/total"].numpy()
        walls.append((time.perf_counter() - start) * 1e3 / args.updates)
    logdir = tempfile.mkdtemp(prefix="update-profile-")
    tf.profiler.experimental.start(logdir)
    start = time.perf_counter()
    train(count)["loss/total"].numpy()
    profiled_wall = (time.perf_counter() - start) * 1e3 / args.updates
    tf.profiler.experimental.stop()
    parts.close()
    split = kernel_split(logdir, args.updates)
    wall, cores = min(walls), os.cpu_count() or 1
    print(f"{os.path.basename(args.config)}: {wall:.2f} ms an update (best of 3 calls of {args.updates}, "
          f"unprofiled), {cores} cores")
    for kind, (ms, runs) in split.items():
        print(f"  {kind:14s} {ms:6.2f} core-ms an update in {runs:5.0f} op runs")
    busy = sum(ms for ms, _ in split.values())
    large = split["large matmuls"][0]
    alone = one_matmul_ms()
    print(f"  a large matmul kernel took {large / max(split['large matmuls'][1], 1):.3f} ms on average; one "
          f"256x256 matmul at batch 256, alone, takes {alone:.3f} ms ({2 * 256 ** 3 / alone / 1e6:.0f} GFLOP/s)")
    print(f"  kernels kept the cores {busy / (profiled_wall * cores):.0%} busy in the profiled call "
          f"({profiled_wall:.2f} ms an update); the large matmuls alone, spread over {cores} cores, would take "
          f"{large / cores:.2f} ms an update")


if __name__ == "__main__":
    main()
