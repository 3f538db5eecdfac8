"""Crash-safe checkpoints of a whole run, and resuming from them.

A checkpoint ``<root_dir>/checkpoints/ckpt-<iteration>`` holds the
algorithm (networks, optimizer slots, schedules' ``progress``), the
transformer chain (normaliser statistics), the replay buffer (unless
``train.checkpoint_replay = false``), the iteration and env-step counters,
the run's random generator (:mod:`rlengine.api.seeding`), NumPy's and Python's
global random state, what the pipeline saves to let its episodes continue
(the sync pipeline: its environment's state and its carry), the running
episode statistics, the evaluation environment's state, and the effective config.

Kill-safety: a checkpoint counts only once its *marker*
``ckpt-<iteration>.complete`` exists. The marker is written atomically
(temp file, fsync, rename) after the checkpoint files are written and
synced, and records their sizes; the loader takes the newest checkpoint
whose marker exists and whose files have those sizes. Old checkpoints are
removed only after a newer one is marked, marker first, so a ``kill -9`` at
any instant leaves the newest complete checkpoint loadable and never
removes the only one.
"""

from __future__ import annotations

import io
import json
import os
import random
import re
import time
from typing import Any, Optional, cast

import numpy as np
import tensorflow as tf

from rlengine.api import seeding as run_random
from rlengine.errors import RLEngineError, telling_line
from rlengine.run.episodes import EpisodeStats

MARKER = ".complete"
_NAME = re.compile(r"^ckpt-(\d+)(\.index|\.data-\d+-of-\d+|_temp.*|\.complete|\.complete\.tmp-\d+)$")


class CheckpointError(RLEngineError):
    """No checkpoint of a run directory can be restored into this run."""


def checkpoint_dir(root_dir: str) -> str:
    return os.path.join(root_dir, "checkpoints")


# -- finding complete checkpoints ---------------------------------------------------
def _read_marker(path: str) -> Optional[dict]:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _intact(directory: str, marker: dict) -> bool:
    """Whether every file the marker lists is there with the size it recorded."""
    files = marker.get("files", {})
    return bool(files) and all(
        os.path.isfile(os.path.join(directory, name)) and os.path.getsize(os.path.join(directory, name)) == size
        for name, size in files.items())


def complete_checkpoints(directory: str) -> list:
    """``(iteration, prefix, marker)`` of every complete checkpoint, newest first."""
    if not os.path.isdir(directory):
        return []
    found = []
    for name in os.listdir(directory):
        match = _NAME.match(name)
        if match and match.group(2) == MARKER:
            marker = _read_marker(os.path.join(directory, name))
            if marker is not None and _intact(directory, marker):
                number = int(match.group(1))
                found.append((number, os.path.join(directory, f"ckpt-{number}"), marker))
    return sorted(found, key=lambda item: item[0], reverse=True)


def newest_checkpoint(root_dir: str) -> Optional[str]:
    """The prefix of the newest complete checkpoint of a run directory, or None."""
    found = complete_checkpoints(checkpoint_dir(root_dir))
    return found[0][1] if found else None


# -- writing safely --------------------------------------------------------------
def _fsync(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: str, text: str) -> None:
    """``path`` is either its old content or all of ``text``, even after a crash."""
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync(os.path.dirname(path))  # the rename itself reaches the disk


def _remove(path: str) -> None:
    if os.path.isdir(path):
        for name in os.listdir(path):
            os.remove(os.path.join(path, name))
        os.rmdir(path)
    elif os.path.exists(path):
        os.remove(path)


# -- small state as strings --------------------------------------------------------
def _arrays_to_bytes(arrays: list) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, *[np.asarray(a) for a in arrays])  # no pickle: loading it runs no code
    return buffer.getvalue()


def _bytes_to_arrays(data: bytes) -> list:
    with np.load(io.BytesIO(data), allow_pickle=False) as files:
        return [files[f"arr_{i}"] for i in range(len(files.files))]


def _global_random_state() -> bytes:
    kind, keys, pos, has_gauss, gauss = cast(tuple, np.random.get_state())  # the legacy tuple form
    return json.dumps({"numpy": [kind, keys.tolist(), pos, has_gauss, gauss],
                       "python": list(random.getstate()[1])}).encode()


def _restore_global_random_state(data: bytes) -> None:
    state = json.loads(data)
    kind, keys, pos, has_gauss, gauss = state["numpy"]
    np.random.set_state((kind, np.array(keys, np.uint32), pos, has_gauss, gauss))
    random.setstate((3, tuple(state["python"]), None))


def _environment_state(env: Any) -> bytes:
    try:
        return env.state()
    except NotImplementedError:  # not supported: a resumed run starts new episodes
        return b""


# -- the root dir's config ------------------------------------------------------------
RESUME_FREE_KEYS = {"train.root_dir"}  # may differ (relative vs absolute path) without changing the run


def _flat(config: dict) -> dict:
    return {f"{section}.{key}": value for section, table in config.items() if isinstance(table, dict)
            for key, value in table.items()}


def differing_keys(old: dict, new: dict) -> list:
    """``section.key`` names whose values differ between two config dicts (missing counts as differing)."""
    a, b = _flat(old), _flat(new)
    return sorted(k for k in set(a) | set(b) if k not in RESUME_FREE_KEYS and a.get(k) != b.get(k))


def check_resumable(root_dir: str, config: dict, force: bool = False) -> None:
    """Refuse a root dir whose ``config.toml`` differs from ``config``, unless ``force``."""
    from rlengine.config import read_toml

    path = os.path.join(root_dir, "config.toml")
    if force or not os.path.isfile(path):
        return
    keys = differing_keys(read_toml(path), config)
    if keys:
        shown = ", ".join(keys[:6]) + (f" and {len(keys) - 6} more" if len(keys) > 6 else "")
        raise RLEngineError(f"{root_dir!r} holds a run with another config (differs in {shown}): resume it "
                            "with the same config, pass --force to continue it with this one, or choose a new "
                            "--root-dir")


def _restore_environment(env: Any, state: bytes) -> bool:
    """Put ``env`` back in its saved ``state``; False when there is none or the env cannot."""
    if not state:
        return False
    try:
        env.restore_state(state)
    except NotImplementedError:
        return False
    return True


BLOBS = ("global_random", "pipeline", "episode_stats", "eval_environment", "config")


class RunCheckpoints:
    """Saves and restores everything a run needs to continue (see the module docstring)."""

    def __init__(self, run: Any, components: Any, stats: EpisodeStats):
        cfg = run.config.train
        self.run, self.components, self.stats = run, components, stats
        self.directory = checkpoint_dir(run.root_dir)
        self.keep = cfg.keep_checkpoints
        self.iteration = tf.Variable(0, dtype=tf.int64, trainable=False, name="iteration")
        self.env_steps = tf.Variable(0, dtype=tf.int64, trainable=False, name="env_steps")
        self.blobs = {name: tf.Variable(b"", dtype=tf.string, trainable=False, name=name) for name in BLOBS}
        self.checkpoint = tf.train.Checkpoint(**checkpointed_objects(components, cfg.checkpoint_replay),
                                              iteration=self.iteration, env_steps=self.env_steps,
                                              random=run_random.generator(), **self.blobs)
        self.checkpoint.save_counter  # created now, so it is written and restored like everything else

    # -- saving ----------------------------------------------------------------------
    def save(self) -> str:
        """Write ``ckpt-<iteration>``, mark it complete, then drop the oldest beyond ``keep``."""
        run, number, parts = self.run, self.run.iteration, self.components
        prefix = os.path.join(self.directory, f"ckpt-{number}")
        if any(n == number for n, _, _ in complete_checkpoints(self.directory)):
            return prefix  # this iteration is saved already; rewriting it would risk the good copy
        os.makedirs(self.directory, exist_ok=True)
        self.iteration.assign(number)
        self.env_steps.assign(run.env_steps)
        self.blobs["global_random"].assign(_global_random_state())
        self.blobs["pipeline"].assign(parts.pipeline.save_state())  # b"": its episodes restart on resume
        self.blobs["episode_stats"].assign(_arrays_to_bytes([self.stats.returns, self.stats.lengths]))
        self.blobs["eval_environment"].assign(_environment_state(parts.eval_env))  # idle between evaluations
        self.blobs["config"].assign(json.dumps(run.config.to_dict(), sort_keys=True))
        self.checkpoint.write(prefix)
        files = {}
        for name in os.listdir(self.directory):
            if name.startswith(f"ckpt-{number}.") and not name.endswith(MARKER):
                _fsync(os.path.join(self.directory, name))
                files[name] = os.path.getsize(os.path.join(self.directory, name))
        marker = {"iteration": number, "env_steps": run.env_steps, "time": time.time(), "files": files}
        write_atomically(os.path.join(self.directory, f"ckpt-{number}{MARKER}"), json.dumps(marker))
        self._prune(number)
        # TensorFlow's own index (tf.train.latest_checkpoint), for tools; the markers are what counts here
        kept = [os.path.basename(p) for _, p, _ in reversed(complete_checkpoints(self.directory))]
        write_atomically(os.path.join(self.directory, "checkpoint"), f'model_checkpoint_path: "ckpt-{number}"\n'
                          + "".join(f'all_model_checkpoint_paths: "{name}"\n' for name in kept))
        return prefix

    def _prune(self, newest: int) -> None:
        """Keep the ``keep`` newest complete checkpoints; drop older ones and leftovers of killed saves."""
        kept = {n for n, _, _ in complete_checkpoints(self.directory)[:self.keep]}
        names = sorted(os.listdir(self.directory), key=lambda name: not name.endswith(MARKER))  # markers first
        for name in names:
            match = _NAME.match(name)
            stale = match and int(match.group(1)) < newest and int(match.group(1)) not in kept
            if stale or name.startswith("checkpoint.tmp-"):  # the latter: TF's index, torn mid-write
                _remove(os.path.join(self.directory, name))

    # -- resuming ----------------------------------------------------------------------
    def restore_or_start(self) -> None:
        """Continue from the newest complete checkpoint, or start the pipeline afresh.

        Restores counters into the run and, when the pipeline's episodes
        continue, the running episode statistics.
        """
        run, parts = self.run, self.components
        found = complete_checkpoints(self.directory)
        if not found:  # from scratch; rows a run killed before its first checkpoint wrote are void
            for writer in parts.writers:
                writer.resume_from(0)
            parts.pipeline.start()
            return
        self._restore_newest_loadable(found)
        run.iteration, run.env_steps = int(self.iteration.numpy()), int(self.env_steps.numpy())
        _restore_global_random_state(self.blobs["global_random"].numpy())
        _restore_environment(parts.eval_env, self.blobs["eval_environment"].numpy())
        for writer in parts.writers:
            writer.resume_from(run.env_steps)
        if parts.pipeline.resume(self.blobs["pipeline"].numpy()):  # the episodes in progress go on
            self.stats.returns, self.stats.lengths = _bytes_to_arrays(self.blobs["episode_stats"].numpy())

    def _restore_newest_loadable(self, found: list) -> None:
        errors = []
        for _, prefix, _ in found:
            try:
                self.checkpoint.restore(prefix).expect_partial().assert_existing_objects_matched()
                return
            except (tf.errors.OpError, AssertionError, ValueError) as exc:
                errors.append(f"{os.path.basename(prefix)}: {telling_line(str(exc)) or repr(exc)}")
        raise CheckpointError(
            f"no checkpoint in {self.directory!r} fits this run ({errors[0]}); it was written by a run with "
            "another algorithm or network shape: train into a new --root-dir")


def checkpointed_objects(components: Any, with_replay: bool = True) -> dict:
    """The trackable objects of a run a checkpoint holds, by key; the engine restores the same keys."""
    objects = dict(algorithm=components.algorithm, transformers=components.chain,
                   skipped_updates=components.learner.skipped_updates)  # a summary that should continue
    if components.buffer is not None and with_replay:
        objects["replay"] = components.buffer
    return objects
