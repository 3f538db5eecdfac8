"""An online run's replay that starts with a dataset's episodes (``train.dataset`` with a pipeline that steps).

Offline to online: a run that steps environments and names ``train.dataset`` (usually with
``train.init_from``, the offline run's checkpoint) fills its replay buffer with the dataset's rows
before its first iteration, so its first updates sample the data the offline run learned from, and
its own experience joins them as it is collected. The core reads no dataset format: the plugin that
reads ``train.dataset`` answers ``rlengine_dataset_rows`` (the offline plugin reads Minari's).

Episodes are dealt to the replay's rings (one per environment copy) in turn, so no ring holds more
than its share; a dataset larger than the replay keeps its newest rows, as collection would. A resumed
run's replay comes from its checkpoint; only when checkpoints leave the replay out
(``train.checkpoint_replay = false``) is it filled with the dataset again.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf

from rlengine.api.data import StepType
from rlengine.errors import ConfigError
from rlengine.learn.replay.buffer import kept_in_replay


def check_dataset_replay(cfg: Any, algorithm_class: Any, plugins: Any) -> None:
    """A dataset with a pipeline that steps environments starts the replay (offline to online): it needs an
    off-policy algorithm and a plugin that reads datasets (:mod:`rlengine.run.dataset_replay`)."""
    if not plugins.manager.hook.rlengine_dataset_rows.get_hookimpls():
        raise ConfigError(f"train.dataset = {cfg.dataset!r}, but no installed plugin reads datasets; install the "
                          "offline plugin (pip install -e plugins/offline), or leave train.dataset empty")
    if cfg.transformers:  # the replay holds transformed observations; a dataset's are as recorded
        raise ConfigError(f"train.dataset = {cfg.dataset!r} starts the replay with the dataset's observations as "
                          f"they were recorded, but train.transformers = {cfg.transformers} would store transformed "
                          "ones beside them: leave train.transformers empty")
    if not algorithm_class.off_policy:
        raise ConfigError(f"train.dataset = {cfg.dataset!r} with pipeline {cfg.pipeline!r} starts the replay of an "
                          f"off-policy run, but {cfg.algorithm!r} is on-policy and keeps none: learn from the "
                          "dataset offline (the offline pipeline), or leave train.dataset empty")


def fill_replay_from_dataset(config: Any, components: Any, plugins: Any) -> int:
    """Add ``train.dataset``'s rows to the run's replay when the run steps environments; the rows added."""
    cfg, replay = config.train, components.replay
    if not cfg.dataset or getattr(components.pipeline, "reads_datasets", False):
        return 0  # no dataset, or a pipeline that learns from it directly
    if replay is None:
        raise ConfigError(f"train.dataset = {cfg.dataset!r} starts an off-policy run's replay, but "
                          f"{cfg.algorithm!r} keeps none: fine-tune with an off-policy algorithm, or leave "
                          "train.dataset empty")
    rows_spec = kept_in_replay(components.specs.experience, components.algorithm)
    chunks = plugins.hook.rlengine_dataset_rows(dataset=cfg.dataset, config=config, specs=components.specs,
                                                rows_spec=rows_spec)
    if chunks is None:
        raise ConfigError(f"train.dataset = {cfg.dataset!r}: no installed plugin reads datasets; install the "
                          "offline plugin (pip install -e plugins/offline), or leave train.dataset empty")
    added, episodes = 0, 0
    for chunk in chunks:
        chunk, episodes = _dealt_to_rings(chunk, episodes, replay.num_envs)
        rows = len(chunk.step_type)
        for start in range(0, rows, replay.rows_per_env):  # one add takes at most a ring's rows of a copy
            replay.add(tf.nest.map_structure(lambda leaf: leaf[start:start + replay.rows_per_env], chunk))
        added += rows
    print(f"rlengine: the replay starts with {added} rows of {episodes} episodes of {cfg.dataset!r} "
          "(train.dataset)", flush=True)
    return added


def _dealt_to_rings(chunk: Any, episodes_before: int, rings: int) -> tuple:
    """``chunk`` with each episode's rows in ring ``episode % rings``; and the episodes counted so far."""
    step_type = np.asarray(chunk.step_type)
    episode = episodes_before - 1 + np.cumsum(step_type == StepType.FIRST)
    env_id = (np.maximum(episode, 0) % rings).astype(np.asarray(chunk.env_id).dtype)
    return chunk._replace(env_id=env_id), int(episode[-1]) + 1 if len(episode) else episodes_before
