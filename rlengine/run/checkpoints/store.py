"""Crash-safe checkpoints of a whole run, and resuming from them.

A checkpoint ``<root_dir>/checkpoints/ckpt-<iteration>`` holds the
algorithm (networks, optimizer slots, schedules' ``progress``), the
transformer chain (normaliser statistics), the replay buffer (unless
``train.checkpoint_replay = false``), the iteration and env-step counters,
the run's random generator (:mod:`rlengine.api.seeding`), NumPy's and Python's
global random state, what the pipeline saves to let its episodes continue
(the sync pipeline: its environment's state and its carry), the running
episode statistics, the evaluation environment's state (a graph environment's: its count of
resets, which seeds the next evaluation), and the effective config.

Kill-safety: a checkpoint counts only once its *marker*
``ckpt-<iteration>.complete`` exists. The marker is written atomically
(temp file, fsync, rename) after the checkpoint files are written and
synced, and records their sizes and checksums
(:mod:`rlengine.run.checkpoints.files`); resume takes the newest checkpoint
whose files match its marker and sets damaged newer ones aside
(:mod:`rlengine.run.checkpoints.restoring`). Old checkpoints are removed only after a
newer one is marked, marker first, so a ``kill -9`` at any instant leaves
the newest complete checkpoint loadable and never removes the only one.

The run's best checkpoint lives beside them in ``checkpoints/best/``
(:mod:`rlengine.run.checkpoints.best`): pruning and resume look only at the
``ckpt-*`` names directly in ``checkpoints/``, so they never touch it.
"""

from __future__ import annotations

import io
import json
import os
import random
import time
from typing import Any, Optional, cast

import numpy as np
import tensorflow as tf

from rlengine.api import seeding
from rlengine.collect import env_state
from rlengine.collect.stepper import is_graph_environment
from rlengine.errors import RLEngineError
from rlengine.files import writing
from rlengine.run.checkpoints.files import (
    FILE_NAME,
    MARKER,
    checkpoint_dir,
    complete_checkpoints,
    mark_complete,
    newest_sound_checkpoint,
    write_tf_index,
)
from rlengine.run.checkpoints.initial import checked_init_source, initialize_from
from rlengine.run.checkpoints.restoring import expect_partial_restores, restore_newest
from rlengine.run.dataset_replay import fill_replay_from_dataset
from rlengine.run.episodes import EpisodeStats


def newest_checkpoint(root_dir: str) -> Optional[str]:
    """The prefix of the newest checkpoint of a run directory whose files match their marker, or None."""
    return newest_sound_checkpoint(checkpoint_dir(root_dir))


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


def _evaluation_state(parts: Any, limit: int) -> bytes:
    """What the next evaluations need to go on as if uninterrupted; b"" when the run does not evaluate.

    A Python environment's state, signed by this user (b"" when it cannot be saved or is above
    ``limit``: its episodes restart). A graph environment keeps no state between evaluations, but
    each evaluation's reset seed counts the resets before it (:func:`rlengine.collect.stepper.reset_seed`):
    the count, as arrays (no pickle).
    """
    if parts.eval_env is None:
        return b""
    if is_graph_environment(parts.eval_env):
        return _arrays_to_bytes([parts.evaluator.caller.resets.numpy()])
    return env_state.saved_state(parts.eval_env, limit)


def _restore_evaluation(parts: Any, state: bytes) -> None:
    """Put the evaluation environment (or a graph environment's reset count) back as :func:`_evaluation_state` saved it."""
    if parts.eval_env is None:
        return
    if not is_graph_environment(parts.eval_env):
        env_state.restore_state(parts.eval_env, state)  # unsigned or foreign: never unpickled
    elif state:  # b"": a checkpoint written before the count was saved
        parts.evaluator.caller.resets.assign(_bytes_to_arrays(state)[0])


# -- the root dir's config ------------------------------------------------------------
RESUME_FREE_KEYS = {"train.root_dir"}  # may differ (relative vs absolute path) without changing the run


def _flat(config: dict) -> dict:
    return {f"{section}.{key}": value for section, table in config.items() if isinstance(table, dict)
            for key, value in table.items()}


def differing_keys(old: dict, new: dict, defaults: Optional[dict] = None) -> list:
    """``section.key`` names whose values differ between two config dicts (missing counts as differing).

    Keys of ``defaults`` (flat ``section.key`` -> default) that the old config lacks count only when the
    new value is not the default: a run dir written before a key existed still resumes. A renamed key
    (``RENAMED_KEYS``) is compared under its new name.
    """
    from rlengine.config import RENAMED_KEYS

    a, b, defaults = _flat(old), _flat(new), defaults or {}
    for was, now in RENAMED_KEYS.items():
        if was in a and now not in a:
            a[now] = a.pop(was)
    for key in set(b) - set(a):
        if key in defaults and b[key] == defaults[key]:
            a[key] = b[key]
    return sorted(k for k in set(a) | set(b) if k not in RESUME_FREE_KEYS and a.get(k) != b.get(k))


def check_resumable(root_dir: str, config: dict, force: bool = False, defaults: Optional[dict] = None) -> None:
    """Refuse a root dir whose ``config.toml`` differs from ``config``, unless ``force``."""
    from rlengine.config import read_toml

    path = os.path.join(root_dir, "config.toml")
    if force or not os.path.isfile(path):
        return
    keys = differing_keys(read_toml(path), config, defaults)
    if keys:
        shown = ", ".join(keys[:6]) + (f" and {len(keys) - 6} more" if len(keys) > 6 else "")
        raise RLEngineError(f"{root_dir!r} holds a run with another config (differs in {shown}): resume it "
                            "with the same config, pass --force to continue it with this one, or choose a new "
                            "--root-dir")


BLOBS = ("global_random", "pipeline", "episode_stats", "eval_environment", "config")


class RunCheckpoints:
    """Saves and restores everything a run needs to continue (see the module docstring)."""

    def __init__(self, run: Any, components: Any, stats: EpisodeStats, plugins: Any = None):
        """``plugins``: the run's plugin manager, asked for ``train.dataset``'s rows when the replay starts."""
        cfg = run.config.train
        self.run, self.components, self.stats, self.plugins = run, components, stats, plugins
        self.directory = checkpoint_dir(run.root_dir)
        self.keep = cfg.keep_checkpoints
        self.iteration = tf.Variable(0, dtype=tf.int64, trainable=False, name="iteration")
        self.env_steps = tf.Variable(0, dtype=tf.int64, trainable=False, name="env_steps")
        self.blobs = {name: tf.Variable(b"", dtype=tf.string, trainable=False, name=name) for name in BLOBS}
        self.checkpoint = tf.train.Checkpoint(**checkpointed_objects(components, cfg.checkpoint_replay),
                                              iteration=self.iteration, env_steps=self.env_steps,
                                              random=seeding.generator(), **self.blobs)
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
        self.blobs["eval_environment"].assign(_evaluation_state(parts, run.config.train.max_env_state_bytes))
        self.blobs["config"].assign(json.dumps(run.config.to_dict(), sort_keys=True))
        with writing(prefix, prefix + "_temp*", prefix + ".*"):  # a full disk: the half-written files go
            self.checkpoint.write(prefix)
            mark_complete(self.directory, number, iteration=number, env_steps=run.env_steps, time=time.time())
        self._prune(number)
        write_tf_index(self.directory)
        return prefix

    def _prune(self, newest: int) -> None:
        """Keep the ``keep`` newest complete checkpoints; drop older ones and leftovers of killed saves."""
        kept = {n for n, _, _ in complete_checkpoints(self.directory)[:self.keep]}
        names = sorted(os.listdir(self.directory), key=lambda name: not name.endswith(MARKER))  # markers first
        for name in names:  # only ckpt-* and TF's index: "best/" and the set-aside dirs match neither
            match = FILE_NAME.match(name)
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
        restored = restore_newest(self.directory, self._restore, set_damaged_aside=True)
        if restored is None:  # from scratch; rows a run killed before its first checkpoint wrote are void
            for writer in parts.writers:
                writer.resume_from(0)
            if run.config.train.init_from:
                initialize_from(run.config.train, parts, checked_init_source(run.config.train, run.root_dir))
            fill_replay_from_dataset(run.config, parts, self.plugins)
            parts.pipeline.start()
            return
        run.iteration, run.env_steps = int(self.iteration.numpy()), int(self.env_steps.numpy())
        _restore_global_random_state(self.blobs["global_random"].numpy())
        for writer in parts.writers:
            writer.resume_from(run.env_steps)
        if not run.config.train.checkpoint_replay:  # the replay restarts: with the dataset again, if any
            fill_replay_from_dataset(run.config, parts, self.plugins)
        with env_state.reading_from(restored):  # a warning about untrusted env state names this checkpoint
            _restore_evaluation(parts, self.blobs["eval_environment"].numpy())
            continued = parts.pipeline.resume(self.blobs["pipeline"].numpy())
        if continued:  # the episodes in progress go on
            self.stats.returns, self.stats.lengths = _bytes_to_arrays(self.blobs["episode_stats"].numpy())

    def _restore(self, prefix: str) -> None:
        try:
            self.checkpoint.restore(prefix).expect_partial().assert_existing_objects_matched()
        except Exception as exc:
            expect_partial_restores(exc.__traceback__)
            raise


def checkpointed_objects(components: Any, with_replay: bool = True) -> dict:
    """The trackable objects of a run a checkpoint holds, by key; the engine restores the same keys."""
    objects = dict(algorithm=components.algorithm, transformers=components.chain,
                   skipped_updates=components.learner.skipped_updates)  # a summary that should continue
    if components.learner.reward_scale is not None:
        objects["reward_scale"] = components.learner.reward_scale
    if components.replay is not None and with_replay:
        objects["replay"] = components.replay
    return objects


def first_nonfinite_variable(checkpoint: tf.train.Checkpoint) -> Optional[str]:
    """The checkpoint path of the first floating-point weight that is not finite, or None.

    The replay buffer is not checked: it holds observations, not weights, and
    can be large.
    """
    view = tf.train.TrackableView(checkpoint)
    queue = [(name, obj) for name, obj in view.children(checkpoint).items() if name != "replay"]
    seen = set()
    while queue:
        path, obj = queue.pop(0)
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, tf.Variable):
            if obj.dtype.is_floating and not bool(tf.reduce_all(tf.math.is_finite(obj))):
                return f"{path} ({obj.name})"
            continue
        queue.extend((f"{path}/{name}", child) for name, child in view.children(obj).items())
    return None
