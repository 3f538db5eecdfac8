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
    """What differs between a dataset's space and the run's spec, leaf by leaf (None when they fit); ``what``
    names the leaf (``observations``, ``observations['pos']``, ...)."""
    from gymnasium import spaces

    if isinstance(space, (spaces.Dict, spaces.Tuple)):
        return _nest_problem(space, spec, what)
    if isinstance(spec, (dict, tuple, list)):
        return f"its {what} are one {type(space).__name__} space, the environment's a {type(spec).__name__} of spaces"
    run = _described(spec)
    if isinstance(space, spaces.Discrete):
        # the engine's specs count discrete values from 0 (a space's start is taken off), so only n must agree
        n = int(space.n)
        fits = spec.dtype.is_integer and spec.shape.rank == 0 and hasattr(spec, "minimum") and (
            int(spec.minimum), int(spec.maximum)) == (0, n - 1)
        first = int(space.start)
        return None if fits else f"its {what} are discrete {first}..{first + n - 1}, the environment's {run}"
    if isinstance(space, spaces.Box):
        integer = np.issubdtype(space.dtype, np.integer)
        fits = tuple(space.shape) == tuple(spec.shape) and spec.dtype.is_integer == integer
        return None if fits else (f"its {what} are {'integer' if integer else 'real'} of shape {tuple(space.shape)}, "
                                  f"the environment's {run}")
    return f"its {what} are {type(space).__name__} spaces; only Box, Discrete, Dict and Tuple ones are read so far"


def _nest_problem(space: Any, spec: Any, what: str) -> Optional[str]:
    """:func:`_space_problem` of a Dict or Tuple space: the same keys (or length), then each part."""
    from gymnasium import spaces

    if isinstance(space, spaces.Dict):
        if not isinstance(spec, dict) or sorted(spec) != sorted(space.spaces):
            theirs = sorted(spec) if isinstance(spec, dict) else _described_nest(spec)
            return f"its {what} are a dict of {sorted(space.spaces)}, the environment's {theirs}"
        parts = [(space.spaces[key], spec[key], f"{what}[{key!r}]") for key in sorted(space.spaces)]
    else:
        if not isinstance(spec, (tuple, list)) or len(spec) != len(space.spaces):
            return f"its {what} are a tuple of {len(space.spaces)}, the environment's {_described_nest(spec)}"
        parts = [(part, spec[i], f"{what}[{i}]") for i, part in enumerate(space.spaces)]
    for part_space, part_spec, name in parts:
        problem = _space_problem(part_space, part_spec, name)
        if problem:
            return problem
    return None


def _described_nest(spec: Any) -> str:
    if isinstance(spec, dict):
        return f"a dict of {sorted(spec)}"
    if isinstance(spec, (tuple, list)):
        return f"a tuple of {len(spec)}"
    return _described(spec)


def _described(spec: Any) -> str:
    """The run's spec in the words of :func:`_space_problem`."""
    if spec.dtype.is_integer and spec.shape.rank == 0 and hasattr(spec, "minimum"):
        return f"discrete {int(spec.minimum)}..{int(spec.maximum)}"
    return f"{'integer' if spec.dtype.is_integer else 'real'} of shape {tuple(spec.shape)}"


def episode_rows(episode: Any, experience_spec: Any, observation_space: Any = None, action_space: Any = None) -> Any:
    """The ``T + 1`` experience rows of one Minari episode, numpy leaves shaped as ``experience_spec``'s.

    Dict and Tuple observations and actions become the nests the engine's specs have (a dict's keys sorted);
    with the dataset's spaces given, discrete values are counted from 0 as in those specs (a space's
    ``start`` taken off)."""
    steps = len(episode.rewards)
    step_type = np.full(steps + 1, StepType.MID, np.int32)
    step_type[0], step_type[-1] = StepType.FIRST, StepType.LAST
    discount = np.ones(steps + 1, np.float32)
    discount[-1] = 0.0 if steps and bool(episode.terminations[-1]) else 1.0
    actions = _nested(episode.actions, experience_spec.action, action_space)
    values = dict(step_type=step_type, reward=np.concatenate([[0.0], episode.rewards]), discount=discount,
                  env_id=np.zeros(steps + 1, np.int32))
    rows = {field: _as_spec(value, getattr(experience_spec, field), steps + 1) for field, value in values.items()}
    observation = _map(lambda value, spec: _as_spec(value, spec, steps + 1),
                       _nested(episode.observations, experience_spec.observation, observation_space),
                       experience_spec.observation)
    prev_action = _map(lambda value, spec: _as_spec(_with_zero_row(value, first=True), spec, steps + 1),
                       actions, experience_spec.prev_action)
    action = _map(lambda value, spec: _as_spec(_with_zero_row(value, first=False), spec, steps + 1),
                  actions, experience_spec.action)
    return experience_spec._replace(**rows, observation=observation, prev_action=prev_action, action=action,
                                    rollout_info=_zeros(experience_spec.rollout_info, steps + 1),
                                    state=_zeros(experience_spec.state, steps + 1))


def _nested(values: Any, spec: Any, space: Any) -> Any:
    """A Minari episode's observations or actions as the nest of ``spec`` (Minari gives a Dict space's values
    as a dict and a Tuple space's as a tuple of arrays), discrete ones counted from 0 when ``space`` is given."""
    from gymnasium import spaces

    if isinstance(spec, dict):
        return {key: _nested(values[key], spec[key], None if space is None else space.spaces[key]) for key in spec}
    if isinstance(spec, (tuple, list)):
        return tuple(_nested(values[i], part, None if space is None else space.spaces[i])
                     for i, part in enumerate(spec))
    values = np.asarray(values)
    if isinstance(space, (spaces.Discrete, spaces.MultiDiscrete)):
        return values - np.asarray(space.start, values.dtype)
    return values


def space_values(values: Any, space: Any) -> Any:
    """The inverse of :func:`_nested`: the engine's nest of arrays (a dict's keys sorted, discrete values
    counted from 0) as the Gymnasium ``space`` holds them (its own key order, its ``start``, its dtype)."""
    from gymnasium import spaces

    if isinstance(space, spaces.Dict):
        return {key: space_values(values[key], part) for key, part in space.spaces.items()}
    if isinstance(space, spaces.Tuple):
        return tuple(space_values(values[i], part) for i, part in enumerate(space.spaces))
    values = np.asarray(values)
    if isinstance(space, (spaces.Discrete, spaces.MultiDiscrete)):
        values = values + np.asarray(space.start, values.dtype)
    return values.astype(space.dtype, copy=False)


def _with_zero_row(values: np.ndarray, first: bool) -> np.ndarray:
    """``values`` with a row of zeros before (``first``) or after them: the action of no step."""
    zero = np.zeros((1, *values.shape[1:]), values.dtype)
    return np.concatenate([zero, values] if first else [values, zero])


def _map(fn: Any, values: Any, spec: Any) -> Any:
    import tensorflow as tf

    return tf.nest.map_structure(fn, values, spec)


def dataset_chunks(dataset: Any, experience_spec: Any) -> Iterator[Any]:
    """The dataset's rows, episode after episode, in chunks of about :data:`ROWS_PER_ADD` rows."""
    pending: list = []
    size = 0
    for episode in dataset.iterate_episodes():
        pending.append(episode_rows(episode, experience_spec, dataset.observation_space, dataset.action_space))
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
