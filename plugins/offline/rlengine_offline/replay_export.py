"""``rlengine collect RUN_DIR --from-replay``: a finished off-policy run's replay buffer written as a dataset.

The rows come from the run's newest checkpoint (:meth:`rlengine.Engine.replay_rows`), copy by copy,
oldest first. Each whole episode a copy's ring holds (a FIRST row through the next LAST) becomes one
Minari episode: its observations, the action taken at each row but the LAST, the reward of arriving at
each next row, and a termination when the LAST row's discount is 0, a truncation otherwise (a time
limit, or an episode a resumed run cut). The ring's oldest rows, whose episode began before them, and
each copy's episode still running are left out. A "medium-replay" dataset is such a replay, taken from
a run stopped part way.
"""

from __future__ import annotations

import os
from typing import Any, Iterator, Optional

import numpy as np

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
        yield (rows.observation[start:end + 1], rows.action[start:end], rows.reward[start + 1:end + 1],
               bool(rows.discount[end] == 0.0))


def replay_buffers(run_dir: str, episodes: Optional[int]) -> tuple[list, list, str]:
    """``(episode buffers, returns, env id)`` of the run's replay: the newest ``episodes`` whole ones, or all."""
    from minari.data_collector import EpisodeBuffer

    import rlengine

    engine = rlengine.Engine(os.path.join(run_dir, "config.toml"), [f"train.root_dir={_toml(run_dir)}"])
    found = []
    for rows in engine.replay_rows():
        if isinstance(rows.observation, (dict, tuple, list)):
            raise ConfigError(f"run {run_dir!r}: its observations are a {type(rows.observation).__name__}; only "
                              "flat Box and Discrete spaces are written to datasets so far")
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
        buffers.append(EpisodeBuffer(id=i, observations=observations, actions=actions, rewards=rewards,
                                     terminations=ends & terminated, truncations=ends & (not terminated), infos={}))
    return buffers, [float(np.sum(r)) for _, _, r, _ in found], engine.config.train.env


def _toml(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
