"""Memory and speed of a 1,000,000-row replay buffer of Pendulum-like experience.

Memory: the raw bytes of the rows, the bytes of the buffer's variables and the
growth of the process RSS (``VmRSS`` in ``/proc/self/status``) from before the
buffer is created to after it is filled with ``add`` in unroll-sized chunks.
Target: RSS growth <= 1.2x the raw bytes. Each kind of buffer (uniform,
prioritized) is measured in a fresh process, so memory freed by one run does
not flatter the next.

Speed: median time of one call of a ``tf.function`` that samples a
256 x 2 batch, adds one row per copy, adds a 32-step unroll, and (prioritized)
updates 256 priorities.

Atari (``--only atari``, also printed first by default): bytes per transition
of a 1,000,000-row buffer of uint8 84x84x4 frame stacks, from
``ReplayBuffer.bytes_needed`` (nothing that size is allocated), with and
without frame stacks, against the 7,056 bytes of one 84x84 frame; then a
``--atari-confirm-rows`` buffer is allocated and filled to confirm the figure.

    python benchmarks/replay_memory.py [--rows 1000000] [--num-envs 16] [--calls 200]
    python benchmarks/replay_memory.py --only atari [--atari-confirm-rows 20000]
"""

import argparse
import re
import statistics
import subprocess
import sys
import time

import tensorflow as tf

from rlengine.api.data import Experience
from rlengine.learn.replay.buffer import ReplayBuffer

SPEC = Experience(
    step_type=tf.TensorSpec([], tf.int32),
    reward=tf.TensorSpec([], tf.float32),
    discount=tf.TensorSpec([], tf.float32),
    observation=tf.TensorSpec([3], tf.float32),
    prev_action=tf.TensorSpec([1], tf.float32),
    env_id=tf.TensorSpec([], tf.int32),
    action=tf.TensorSpec([1], tf.float32),
    rollout_info=(),
    state=(),
)
ATARI_SPEC = Experience(
    step_type=tf.TensorSpec([], tf.int32),
    reward=tf.TensorSpec([], tf.float32),
    discount=tf.TensorSpec([], tf.float32),
    observation=tf.TensorSpec([84, 84, 4], tf.uint8),  # 4 grayscale frames along the last axis
    prev_action=tf.TensorSpec([], tf.int32),
    env_id=tf.TensorSpec([], tf.int32),
    action=tf.TensorSpec([], tf.int32),
    rollout_info=(),
    state=(),
)
ATARI_STACKS = [(-1, 4) if name == "observation" else None for name in ATARI_SPEC._fields
                if tf.nest.flatten(getattr(ATARI_SPEC, name))]  # aligned with the flattened spec
FRAME_BYTES = 84 * 84
ATARI_ROWS = 1_000_000
UNROLL = 32
CHUNK_STEPS = UNROLL  # time steps per add() while filling, as the engine would add an unroll


def rss_bytes() -> int:
    with open("/proc/self/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)\s+kB", f.read()).group(1)) * 1024


def row_bytes(spec) -> int:
    return sum(s.shape.num_elements() * s.dtype.size for s in tf.nest.flatten(spec))


def rows(num_envs: int, steps: int) -> Experience:
    """``[steps * num_envs]`` rows, flattened time-major (row t * num_envs + e)."""
    n = steps * num_envs
    zeros = tf.nest.map_structure(lambda s: tf.zeros([n, *s.shape], s.dtype), SPEC)
    return zeros._replace(env_id=tf.tile(tf.range(num_envs, dtype=tf.int32), [steps]))


def median_ms(fn, calls: int, *args) -> float:
    fn(*args)  # trace
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def warm_up(num_envs: int, prioritized: bool) -> None:
    """Load the kernels and thread pools first, so RSS growth is the buffer's own."""
    small = ReplayBuffer(SPEC, num_envs, num_envs * 64, prioritized=prioritized)
    tf.function(small.add, autograph=False)(rows(num_envs, 8))
    small.sample(4)


def build_and_fill(num_rows: int, num_envs: int, prioritized: bool) -> tuple:
    """Create and fill a buffer; returns it, its traced ``add``, the RSS growth and the fill time."""
    chunk = rows(num_envs, CHUNK_STEPS)
    before = rss_bytes()
    buffer = ReplayBuffer(SPEC, num_envs, num_rows, sequence_length=2, prioritized=prioritized)
    add = tf.function(buffer.add, autograph=False)
    start = time.perf_counter()
    for _ in range(-(-buffer.rows_per_env // CHUNK_STEPS)):
        add(chunk)
    return buffer, add, rss_bytes() - before, time.perf_counter() - start


def variable_bytes(buffer: ReplayBuffer) -> int:
    return sum(v.shape.num_elements() * v.dtype.size for v in buffer.variables)


def measure(args: argparse.Namespace, prioritized: bool) -> None:
    kind = "prioritized" if prioritized else "uniform"
    warm_up(args.num_envs, prioritized)
    # A buffer 100x smaller first: what it costs beyond its variables is the
    # fixed price of a buffer (tracing and first run of its graphs).
    small, _, small_grown, _ = build_and_fill(args.rows // 100, args.num_envs, prioritized)
    fixed = small_grown - variable_bytes(small)
    buffer, add, grown, fill_s = build_and_fill(args.rows, args.num_envs, prioritized)
    raw = buffer.capacity * row_bytes(SPEC)
    held = variable_bytes(buffer)
    print(f"[{kind}] rows held {int(buffer.num_rows()):,} of {buffer.capacity:,} "
          f"({args.num_envs} copies x {buffer.rows_per_env:,}); fill took {fill_s:.2f} s")
    print(f"[{kind}] raw row bytes  {raw / 1e6:8.2f} MB")
    print(f"[{kind}] variable bytes {held / 1e6:8.2f} MB  ratio {held / raw:.3f}")
    print(f"[{kind}] RSS growth     {grown / 1e6:8.2f} MB  ratio {grown / raw:.3f}  (target <= 1.2)")
    print(f"[{kind}]   of which fixed per-buffer cost {fixed / 1e6:.2f} MB (from a {small.capacity:,}-row buffer); "
          f"growth beyond it: ratio {(grown - fixed) / raw:.3f}")

    sample = tf.function(lambda: buffer.sample(256), autograph=False)
    one_step = rows(args.num_envs, 1)
    unroll = rows(args.num_envs, UNROLL)
    print(f"[{kind}] sample 256 x 2          median {median_ms(sample, args.calls):.3f} ms")
    print(f"[{kind}] add {args.num_envs} rows (1 step)    median {median_ms(add, args.calls, one_step):.3f} ms")
    print(f"[{kind}] add {args.num_envs * UNROLL} rows ({UNROLL} steps) median "
          f"{median_ms(add, args.calls, unroll):.3f} ms")
    if prioritized:
        drawn = sample()
        update = tf.function(buffer.update_priorities, autograph=False)
        priorities = tf.random.uniform([256])
        print(f"[{kind}] update 256 priorities   median "
              f"{median_ms(update, args.calls, drawn.indices, priorities):.3f} ms")


def atari_rows(num_envs: int, steps: int, start: int) -> Experience:
    """Frame-stack rows of steps ``start ..``, flattened time-major; episodes of 100 steps."""
    t = tf.repeat(tf.range(start, start + steps), num_envs)
    frames = tf.stack([tf.maximum(t - 3 + j, t - t % 100) for j in range(4)], axis=-1)  # padded at episode starts
    observation = tf.broadcast_to(tf.cast(frames % 256, tf.uint8)[:, None, None, :], [steps * num_envs, 84, 84, 4])
    zeros = tf.nest.map_structure(lambda s: tf.zeros([steps * num_envs, *s.shape], s.dtype), ATARI_SPEC)
    return zeros._replace(step_type=tf.where(t % 100 == 0, 0, 1), observation=observation,
                          env_id=tf.tile(tf.range(num_envs, dtype=tf.int32), [steps]))


def measure_atari(args: argparse.Namespace) -> None:
    print(f"[atari] 1 frame = {FRAME_BYTES:,} bytes; one row also holds {row_bytes(ATARI_SPEC) - 4 * FRAME_BYTES} "
          "bytes of small leaves")
    for prioritized in (False, True):
        kind = "prioritized" if prioritized else "uniform"
        for stacks, label in ((None, "whole stacks    "), (ATARI_STACKS, "one frame a row ")):
            total = ReplayBuffer.bytes_needed(ATARI_SPEC, args.num_envs, ATARI_ROWS, prioritized, stacks)
            print(f"[atari] {kind:11s} {label} {ATARI_ROWS:,} rows: {total / 2**30:6.2f} GiB, "
                  f"{total / ATARI_ROWS:8.1f} bytes per transition ({total / ATARI_ROWS / FRAME_BYTES:.2f} frames)")
    if args.atari_confirm_rows > 0:
        confirm_atari(args)


def confirm_atari(args: argparse.Namespace) -> None:
    """Allocate and fill a smaller frame-stacked buffer: its variables and RSS growth against bytes_needed."""
    chunk = atari_rows(args.num_envs, CHUNK_STEPS, 0)
    fill_chunks = -(-args.atari_confirm_rows // args.num_envs // CHUNK_STEPS)
    for stacks, label in ((ATARI_STACKS, "frame stacks"), (None, "whole stacks")):
        small = ReplayBuffer(ATARI_SPEC, args.num_envs, args.num_envs * CHUNK_STEPS, frame_stacks=stacks)
        tf.function(small.add, autograph=False)(chunk)  # kernels and thread pools loaded before measuring
        before = rss_bytes()
        buffer = ReplayBuffer(ATARI_SPEC, args.num_envs, args.atari_confirm_rows, frame_stacks=stacks)
        add = tf.function(buffer.add, autograph=False)
        for i in range(fill_chunks):
            add(atari_rows(args.num_envs, CHUNK_STEPS, i * CHUNK_STEPS))
        grown, rows = rss_bytes() - before, buffer.capacity
        expected = ReplayBuffer.bytes_needed(ATARI_SPEC, args.num_envs, rows, frame_stacks=stacks)
        print(f"[atari] {label}: allocated {rows:,} rows: variables {variable_bytes(buffer) / rows:.1f} bytes per "
              f"row (bytes_needed {expected / rows:.1f}); RSS growth {grown / rows:.1f} bytes per row "
              "(with tracing and the fill's input rows)")
        sample = tf.function(lambda buffer=buffer: buffer.sample(32), autograph=False)
        print(f"[atari] {label}: sample 32 x 2 median {median_ms(sample, args.calls):.3f} ms")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--num-envs", type=int, default=16)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--only", choices=["uniform", "prioritized", "atari"])
    parser.add_argument("--atari-confirm-rows", type=int, default=20_000)
    args = parser.parse_args()
    if args.only == "atari":
        measure_atari(args)
        return
    if args.only:
        measure(args, args.only == "prioritized")
        return
    subprocess.run([sys.executable, __file__, "--num-envs", str(args.num_envs), "--calls", str(args.calls),
                    "--atari-confirm-rows", str(args.atari_confirm_rows), "--only", "atari"], check=True)
    fields = [name for name in SPEC._fields if tf.nest.flatten(getattr(SPEC, name))]
    print(f"row: {row_bytes(SPEC)} bytes ({', '.join(fields)})")
    for kind in ("uniform", "prioritized"):  # a fresh process each
        subprocess.run([sys.executable, __file__, "--rows", str(args.rows), "--num-envs", str(args.num_envs),
                        "--calls", str(args.calls), "--only", kind], check=True)


if __name__ == "__main__":
    main()
