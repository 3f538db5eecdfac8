"""A finished run's replay buffer read back from its checkpoint, copy by copy (``Engine.replay_rows``).

What ``rlengine collect --from-replay`` turns into a dataset: every row each environment copy's ring
still holds, oldest first, as the run stored them (observations after the run's transformers, if it
had any). Only the newest checkpoint holds the replay (``checkpoints/best/`` keeps what acting needs),
and only when ``train.checkpoint_replay`` was on.
"""

from __future__ import annotations

from typing import Any, Iterator

import tensorflow as tf

from rlengine.errors import CheckpointError


def held_rows(root_dir: str, components: Any, prefix: str) -> Iterator[Any]:
    """Restore the replay of checkpoint ``prefix`` into ``components.replay``; then each copy's rows (numpy)."""
    replay = components.replay
    if replay is None:
        raise CheckpointError(f"run {root_dir!r}: its algorithm keeps no replay buffer (it learns on-policy, or "
                              "from a dataset)")
    names = {name.split("/")[0] for name, _ in tf.train.list_variables(prefix)}
    if "replay" not in names:
        raise CheckpointError(f"run {root_dir!r}: checkpoint {prefix} holds no replay buffer (the run had "
                              "train.checkpoint_replay = false)")
    tf.train.Checkpoint(replay=replay).restore(prefix).expect_partial().assert_existing_objects_matched()
    for env in range(replay.num_envs):
        yield tf.nest.map_structure(lambda leaf: leaf.numpy(), replay.held_rows(env))
