"""Reading Minari datasets: open one by id or path, check its spaces against a run's specs, turn its
episodes into the engine's experience rows.

Minari's own reader does the reading (:func:`minari.load_dataset`, :class:`minari.MinariDataset`); an id
that is not stored locally goes to Minari's download, which needs its servers. Rows follow
:mod:`rlengine.api.data`: an episode of ``T`` steps is ``T + 1`` rows, the first FIRST, the last LAST
(discount 0 if the episode terminated, 1 if it was truncated), ``reward[t]`` the reward of arriving at
``observation[t]`` and ``action[t]`` the action taken there (zeros on the LAST row, which takes none).
"""

from __future__ import annotations

import os
from typing import Any, Iterator, Optional

import numpy as np

from rlengine import ConfigError, StepType

#: rows per replay add when a dataset is loaded (bounds the host memory of one add)
ROWS_PER_ADD = 65_536


def open_dataset(name: str) -> Any:
    """The :class:`minari.MinariDataset` of ``name``: a dataset directory, a local id, else Minari's download."""
    import minari

    if os.path.isdir(name):
        data = os.path.join(name, "data") if os.path.isdir(os.path.join(name, "data")) else name
        try:
            return minari.MinariDataset(data)
        except Exception as exc:  # not a dataset directory at all
            raise ConfigError(f"dataset {name!r}: the directory is not a Minari dataset ({exc}); give a Minari "
                              "dataset id or the directory rlengine collect wrote") from None
    if name in minari.list_local_datasets():
        return minari.load_dataset(name)
    try:
        return minari.load_dataset(name, download=True)
    except Exception as exc:
        root = os.environ.get("MINARI_DATASETS_PATH", os.path.join("~", ".minari", "datasets"))
        raise ConfigError(f"dataset {name!r} is not stored under {root} and could not be downloaded "
                          f"({type(exc).__name__}: {exc}); record one with rlengine collect, or check the id "
                          "(minari list remote)") from None


def env_id_of(dataset: Any) -> Optional[str]:
    """The Gymnasium id of the environment the dataset was recorded on (None if it names none)."""
    spec = dataset.spec.env_spec
    return None if spec is None else spec.id


def normalised_score(dataset: Any, average_return: float) -> Optional[float]:
    """``average_return`` on D4RL's scale (0: the dataset's random reference, 100: its expert one), or None
    when the dataset has no ``ref_min_score``/``ref_max_score``."""
    low, high = (dataset.storage.metadata.get(key) for key in ("ref_min_score", "ref_max_score"))
    if low is None or high is None or high == low:
        return None
    return 100.0 * (average_return - float(low)) / (float(high) - float(low))


def check_spaces(dataset: Any, observation_spec: Any, action_spec: Any, env: str) -> None:
    """One line naming the dataset and what differs when its spaces do not fit the run's specs."""
    problem = (_space_problem(dataset.observation_space, observation_spec, "observations")
               or _space_problem(dataset.action_space, action_spec, "actions"))
    if problem:
        raise ConfigError(f"dataset {dataset.spec.dataset_id!r} does not fit environment {env!r}: {problem}; train "
                          "on the environment the dataset was recorded on (leave out --env) or pick a dataset of "
                          "this one")


def _space_problem(space: Any, spec: Any, what: str) -> Optional[str]:
    from gymnasium import spaces

    run = _described(spec)
    if isinstance(space, spaces.Discrete):
        first, last = int(space.start), int(space.start + space.n - 1)
        fits = spec.dtype.is_integer and spec.shape.rank == 0 and (int(spec.minimum), int(spec.maximum)) == (
            first, last)
        return None if fits else f"its {what} are discrete {first}..{last}, the environment's {run}"
    if isinstance(space, spaces.Box):
        integer = np.issubdtype(space.dtype, np.integer)
        fits = tuple(space.shape) == tuple(spec.shape) and spec.dtype.is_integer == integer
        return None if fits else (f"its {what} are {'integer' if integer else 'real'} of shape {tuple(space.shape)}, "
                                  f"the environment's {run}")
    return f"its {what} are {type(space).__name__} spaces; only Box and Discrete ones are read so far"


def _described(spec: Any) -> str:
    """The run's spec in the words of :func:`_space_problem`."""
    if spec.dtype.is_integer and spec.shape.rank == 0 and hasattr(spec, "minimum"):
        return f"discrete {int(spec.minimum)}..{int(spec.maximum)}"
    return f"{'integer' if spec.dtype.is_integer else 'real'} of shape {tuple(spec.shape)}"


def episode_rows(episode: Any, experience_spec: Any) -> Any:
    """The ``T + 1`` experience rows of one Minari episode, numpy leaves shaped as ``experience_spec``'s."""
    steps = len(episode.rewards)
    step_type = np.full(steps + 1, StepType.MID, np.int32)
    step_type[0], step_type[-1] = StepType.FIRST, StepType.LAST
    discount = np.ones(steps + 1, np.float32)
    discount[-1] = 0.0 if steps and bool(episode.terminations[-1]) else 1.0
    actions = np.asarray(episode.actions)
    zero_action = np.zeros((1, *actions.shape[1:]), actions.dtype)
    values = dict(step_type=step_type, reward=np.concatenate([[0.0], episode.rewards]), discount=discount,
                  observation=np.asarray(episode.observations), env_id=np.zeros(steps + 1, np.int32),
                  prev_action=np.concatenate([zero_action, actions]), action=np.concatenate([actions, zero_action]))
    return experience_spec._replace(**{
        field: _as_spec(value, getattr(experience_spec, field), steps + 1) for field, value in values.items()},
        rollout_info=_zeros(experience_spec.rollout_info, steps + 1), state=_zeros(experience_spec.state, steps + 1))


def dataset_chunks(dataset: Any, experience_spec: Any) -> Iterator[Any]:
    """The dataset's rows, episode after episode, in chunks of about :data:`ROWS_PER_ADD` rows."""
    pending: list = []
    size = 0
    for episode in dataset.iterate_episodes():
        pending.append(episode_rows(episode, experience_spec))
        size += len(pending[-1].step_type)
        if size >= ROWS_PER_ADD:
            yield _concatenated(pending)
            pending, size = [], 0
    if pending:
        yield _concatenated(pending)


def _concatenated(rows: list) -> Any:
    import tensorflow as tf

    return tf.nest.map_structure(lambda *leaves: np.concatenate(leaves), *rows)


def _as_spec(value: Any, spec: Any, rows: int) -> np.ndarray:
    return np.asarray(value).astype(spec.dtype.as_numpy_dtype, copy=False).reshape(rows, *spec.shape)


def _zeros(spec: Any, rows: int) -> Any:
    import tensorflow as tf

    return tf.nest.map_structure(lambda s: np.zeros((rows, *s.shape), s.dtype.as_numpy_dtype), spec)
