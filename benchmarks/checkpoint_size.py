"""Write time and size of a run checkpoint holding a full 1,000,000-row replay buffer (SAC, Pendulum-v1).

Builds the components of a SAC/Pendulum run exactly as ``rlengine train``
does (``replay_capacity`` rows, ``num_envs`` copies), fills the buffer with
random Pendulum rows, then times :class:`rlengine.run.checkpoints.store.RunCheckpoints`
``save`` (write, fsync, mark complete) and the restore a resumed run does,
and prints the size of the checkpoint files next to the rows' raw bytes.
The same for a buffer of that capacity holding only ``--partial`` rows (a
checkpoint holds the rows written, not the preallocated capacity), and for a
checkpoint without the buffer (``train.checkpoint_replay = false``).

    python benchmarks/checkpoint_size.py [--rows 1000000] [--num-envs 1] [--saves 3] [--partial 768]
"""

import argparse
import os
import statistics
import tempfile
import time

import numpy as np
import tensorflow as tf

from rlengine.api.run import Run
from rlengine.run.build import build_components
from rlengine.run.checkpoints.store import RunCheckpoints, newest_checkpoint
from rlengine.run.engine import Engine, seed_everything
from rlengine.run.episodes import EpisodeStats

CHUNK = 100_000  # rows per add() call while filling


def build_run(rows: int, num_envs: int, keep_replay: bool, root: str) -> Run:
    engine = Engine({"train": {"algorithm": "sac", "env": "Pendulum-v1", "num_envs": num_envs, "root_dir": root,
                               "writers": [], "checkpoint_replay": keep_replay, "keep_checkpoints": 1},
                     "sac": {"replay_capacity": rows}})
    seed_everything(0)
    components = build_components(engine.config, engine.plugins, root)
    return Run(engine.config, root, components.algorithm, components.specs, components.pipeline,
               internals=components)


def fill(buffer, num_envs: int, rows_per_env: int) -> int:
    """Fill every ring's first ``rows_per_env`` rows with random rows; returns the raw bytes of the rows held."""
    spec = buffer._rings.spec
    for env in range(num_envs):
        for start in range(0, rows_per_env, CHUNK):
            n = min(CHUNK, rows_per_env - start)
            rows = tf.nest.map_structure(lambda s: _random_leaf(s, n), spec)
            buffer.add(rows._replace(env_id=tf.fill([n], tf.constant(env, rows.env_id.dtype))))
    row_bytes = sum(int(np.prod(v.shape[2:])) * v.dtype.size for v in buffer._storage)
    return num_envs * rows_per_env * row_bytes


def _random_leaf(spec, n: int):
    if spec.dtype.is_floating:
        return tf.random.uniform([n, *spec.shape], dtype=spec.dtype)
    return tf.ones([n, *spec.shape], spec.dtype)  # step types MID


def measure(rows: int, num_envs: int, keep_replay: bool, saves: int, filled: int) -> dict:
    """``filled``: rows written into the buffer (all envs together)."""
    root = tempfile.mkdtemp(prefix="rlengine-ckpt-bench-")
    run = build_run(rows, num_envs, keep_replay, root)
    try:
        buffer = run.internals.replay
        raw = fill(buffer, num_envs, min(filled // num_envs, buffer.rows_per_env)) if keep_replay else 0
        run.internals.pipeline.start()
        checkpoints = RunCheckpoints(run, run.internals, EpisodeStats(num_envs))
        write_times = []
        for i in range(1, saves + 1):
            run.iteration, run.env_steps = i, i * 4
            t0 = time.perf_counter()
            checkpoints.save()
            write_times.append(time.perf_counter() - t0)
        prefix = newest_checkpoint(root)
        size = sum(os.path.getsize(os.path.join(root, "checkpoints", n)) for n in os.listdir(
            os.path.join(root, "checkpoints")) if n.startswith(os.path.basename(prefix) + "."))
        t0 = time.perf_counter()
        checkpoints.checkpoint.restore(prefix).expect_partial().assert_existing_objects_matched()
        restore_time = time.perf_counter() - t0
    finally:
        run.internals.close()
    return {"raw": raw, "size": size, "write": statistics.median(write_times), "restore": restore_time}


def _megabytes(count: int) -> str:
    return f"{count / 1e6:.1f} MB" if count >= 1e5 else f"{count / 1e3:.1f} kB"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--num-envs", type=int, default=1)
    p.add_argument("--saves", type=int, default=3)
    p.add_argument("--partial", type=int, default=768, help="rows held by the partly filled buffer")
    args = p.parse_args()
    cases = [(True, args.rows, f"{args.rows:,}-row replay buffer"),
             (True, args.partial, f"{args.rows:,}-row replay buffer holding {args.partial:,} rows"),
             (False, 0, "no replay buffer (checkpoint_replay = false)")]
    for keep_replay, filled, what in cases:
        m = measure(args.rows, args.num_envs, keep_replay, args.saves, filled)
        raw = f" (the rows' raw bytes: {_megabytes(m['raw'])})" if keep_replay else ""
        print(f"checkpoint with {what}: {_megabytes(m['size'])} on disk{raw}, write {m['write']:.2f} s "
              f"(median of {args.saves}, fsync and marker included), restore {m['restore']:.2f} s")


if __name__ == "__main__":
    main()
