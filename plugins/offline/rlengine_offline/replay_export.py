"""``rlengine collect RUN_DIR --from-replay``: a finished off-policy run's replay buffer written as a dataset.

The rows come from the run's newest checkpoint (:meth:`rlengine.Engine.replay_rows`), copy by copy,
oldest first. Each whole episode a copy's ring holds (a FIRST row through the next LAST) becomes one
Minari episode: its observations, the action taken at each row but the LAST, the reward of arriving at
each next row, and a termination when the LAST row's discount is 0, a truncation otherwise (a time
limit, or an episode a resumed run cut). The ring's oldest rows, whose episode began before them, and
each copy's episode still running are left out. Dict and Tuple observations and actions are written as
the environment's spaces hold them (:func:`~rlengine_offline.datasets.space_values`). A "medium-replay"
dataset is such a replay, taken from a run stopped part way.
"""

from __future__ import annotations

import os
from typing import Any, Iterator, Optional

import numpy as np
import tensorflow as tf

from rlengine import ConfigError, StepType


def episodes_of(rows: Any) -> Iterator[tuple]:
    """``(observations, actions, rewards, terminated)`` of every whole episode in one copy's ``rows``."""
    step_type = np.asarray(rows.step_type)
    last = np.flatnonzero(step_type == StepType.LAST)
    for start in np.flatnonzero(step_type == StepType.FIRST):
        ends = last[last > start]
        if not len(ends) or np.any(step_type[start + 1:ends[0] + 1] == StepType.FIRST):
            continue  # still running when the checkpoint was written, or cut short before its LAST
        end = ends[0]
        yield (tf.nest.map_structure(lambda leaf: leaf[start:end + 1], rows.observation),
               tf.nest.map_structure(lambda leaf: leaf[start:end], rows.action),
               rows.reward[start + 1:end + 1], bool(rows.discount[end] == 0.0))


def replay_engine(run_dir: str) -> Any:
    """The engine of the finished run ``run_dir``, as its ``config.toml`` and directory say."""
    import rlengine

    return rlengine.Engine(os.path.join(run_dir, "config.toml"), [f"train.root_dir={_toml(run_dir)}"])


def replay_buffers(engine: Any, run_dir: str, env: Any, episodes: Optional[int]) -> tuple[list, list]:
    """``(episode buffers, returns)`` of the run's replay: the newest ``episodes`` whole ones, or all, their
    observations and actions as the Gymnasium ``env``'s spaces hold them."""
    from minari.data_collector import EpisodeBuffer

    from rlengine_offline.datasets import space_values

    found = []
    for rows in engine.replay_rows():
        found.extend(episodes_of(rows))
    if not found:
        raise ConfigError(f"run {run_dir!r}: its replay holds no whole episode (each copy's episodes are cut by "
                          "the ring's start or still running); train it longer, or record its policy instead")
    found = found[-episodes:] if episodes else found
    buffers = []
    for i, (observations, actions, rewards, terminated) in enumerate(found):
        steps = len(rewards)
        ends = np.zeros(steps, bool)
        ends[-1] = True
        buffers.append(EpisodeBuffer(id=i, observations=space_values(observations, env.observation_space),
                                     actions=space_values(actions, env.action_space), rewards=rewards,
                                     terminations=ends & terminated, truncations=ends & (not terminated), infos={}))
    return buffers, [float(np.sum(r)) for _, _, r, _ in found]


def _toml(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
