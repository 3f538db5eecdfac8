"""Starting a run from another run's checkpoint (``train.init_from``): fine-tuning, offline to online.

A fresh run that names ``train.init_from = RUN_DIR`` restores, before its first iteration, what
:meth:`rlengine.Engine.restored` restores for ``eval``: the algorithm (networks, target networks,
optimizer slots, schedules' progress) and the transformer chain (normaliser statistics), from the
checkpoint ``train.init_checkpoint`` names in ``RUN_DIR`` (``latest`` falls back past damaged ones,
as ``eval`` does). Everything else starts afresh: the iteration and env-step counters, the replay
buffer (or the dataset's rows, :mod:`rlengine.run.dataset_replay`), the environments and the
reward scale. The source directory is only read.

A run that has checkpoints of its own resumes them and never reads ``train.init_from`` again,
so an interrupted fine-tuning continues exactly.

    engine = Engine(None, ["train.algorithm=\"iql\"", "train.init_from=\"runs/iql-offline\""])
    engine.train()   # iteration 1 acts with the offline run's weights
"""

from __future__ import annotations

import os
from typing import Any, Optional

import tensorflow as tf

from rlengine.errors import CheckpointError, CheckpointMismatchError, ConfigError
from rlengine.run.checkpoints.files import checkpoint_dir, marked_checkpoints
from rlengine.run.checkpoints.restoring import checked_choice, expect_partial_restores, restore_choice


def checked_init_source(train: Any, root_dir: str) -> Optional[str]:
    """The checkpoint ``train.init_from`` names, checked before anything is built; one-line errors.

    ``None`` when there is nothing to start from (no ``init_from``, or the run resumes its own
    checkpoints) and for ``latest`` (which one loads is found while restoring); else its prefix.
    """
    source = train.init_from
    if not source or marked_checkpoints(checkpoint_dir(root_dir)):
        return None
    if not os.path.isdir(source):
        raise ConfigError(f"train.init_from = {source!r} is not a directory: name the root dir of a run "
                          "'rlengine train' wrote (rlengine runs lists them)")
    if os.path.realpath(source) == os.path.realpath(root_dir):
        raise ConfigError(f"train.init_from = {source!r} is this run's own root dir: a run continues its own "
                          "checkpoints by itself; name another run, or leave train.init_from empty")
    try:
        return checked_choice(source, train.init_checkpoint)
    except CheckpointError as err:
        raise ConfigError(f"train.init_from: {err}") from None


def initialize_from(train: Any, components: Any, chosen: Optional[str]) -> str:
    """Restore the algorithm and transformers of ``components`` from ``train.init_from``; the prefix used."""
    saved = tf.train.Checkpoint(algorithm=components.algorithm, transformers=components.chain)

    def restore(prefix: str) -> None:
        try:
            saved.restore(prefix).expect_partial().assert_existing_objects_matched()
        except Exception as exc:
            expect_partial_restores(exc.__traceback__)  # our one line says it; no TensorFlow list after it
            raise

    try:
        prefix = restore_choice(train.init_from, chosen, restore)
    except CheckpointMismatchError as err:
        raise ConfigError(
            f"train.init_from: checkpoint {err.checkpoint} does not fit this run (first difference: "
            f"{err.difference}): start from a run of the same algorithm and networks (its config.toml), "
            "or leave train.init_from empty") from None
    print(f"rlengine: starting from {prefix} (train.init_from): its weights, optimizer and statistics; "
          "counters and replay start afresh", flush=True)
    return prefix
