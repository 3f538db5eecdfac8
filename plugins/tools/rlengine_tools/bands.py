"""Runs grouped by config, and each group's curve: the mean (or IQM) over seeds with a bootstrapped 95% band.

The maths of ``rlengine plot`` on several seeds, apart from the drawing:

* :func:`group_runs`: runs whose ``config.toml`` agree on everything but
  ``train.seed`` and ``train.root_dir`` are one group; :func:`group_labels`
  names each by its algorithm, env and the keys that tell the groups apart.
* :func:`smooth`: a trailing moving average over the last K evaluations of a run.
* :func:`on_grid`: every run of a group on one env-step grid (the union of the
  runs' evaluation steps), linearly interpolated between its own evaluations.
  Before its first evaluation a run has no value; after its last, a finished
  run keeps its final value (training is over: that is the policy it ends
  with) and an unfinished one has none.
* :func:`band`: at each grid step, the statistic over the runs that have a
  value there, and the 2.5th and 97.5th percentiles of that statistic over
  ``RESAMPLES`` bootstrap resamples of those runs (seeds drawn with
  replacement), from a generator seeded with ``BOOTSTRAP_SEED``: the same runs
  always give the same band.
"""

from __future__ import annotations

import json
from typing import Any, Callable

import attrs
import numpy as np

RESAMPLES = 2000
BOOTSTRAP_SEED = 0
PER_RUN_KEYS = ("train.seed", "train.root_dir")  # what differs between seeds of one config
MAX_LABEL_KEYS = 4


@attrs.define
class Group:
    """Runs of one config: their directories, seeds, and that config (flattened, per-run keys removed)."""

    config: dict
    runs: list = attrs.field(factory=list)
    seeds: list = attrs.field(factory=list)
    label: str = ""


def flatten(config: dict) -> dict:
    """``{"train": {"seed": 0}}`` -> ``{"train.seed": 0}`` (tables nested in sections keep their dotted path)."""
    out: dict = {}
    for key, value in config.items():
        if isinstance(value, dict):
            out.update({f"{key}.{inner}": v for inner, v in flatten(value).items()})
        else:
            out[key] = value
    return out


def group_runs(runs: list, config_of: Callable[[str], dict]) -> list:
    """Group run directories by their config minus the per-run keys, in the order the runs came."""
    groups: dict = {}
    for run in runs:
        config = flatten(config_of(run))
        seed = config.get("train.seed")
        shared = {k: v for k, v in config.items() if k not in PER_RUN_KEYS}
        # a run without a config (only metrics.jsonl) is a group of its own
        key = json.dumps(shared, sort_keys=True, default=str) if shared else f"run:{run}"
        group = groups.setdefault(key, Group(shared))
        group.runs.append(run)
        group.seeds.append(seed)
    return list(groups.values())


def _value_text(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return json.dumps(value) if isinstance(value, (list, dict)) else str(value)


def group_labels(groups: list) -> None:
    """Set each group's legend label: ``ppo CartPole-v1 learning_rate=0.0003 (5 seeds)``.

    The keys shown are those whose values differ between the groups (the
    algorithm and env are always named); a key is shortened to its last part
    when that part is unambiguous among them.
    """
    keys = sorted({k for g in groups for k in g.config} - {"train.algorithm", "train.env"})
    differing = [k for k in keys if len({_value_text(g.config.get(k)) for g in groups}) > 1]
    names = [k.rsplit(".", 1)[-1] for k in differing]
    short = {k: (n if names.count(n) == 1 else k) for k, n in zip(differing, names)}
    for group in groups:
        parts = [str(group.config[k]) for k in ("train.algorithm", "train.env") if k in group.config]
        shown = [f"{short[k]}={_value_text(group.config[k])}" for k in differing if k in group.config]
        if len(shown) > MAX_LABEL_KEYS:
            shown = shown[:MAX_LABEL_KEYS] + [f"+{len(shown) - MAX_LABEL_KEYS} keys"]
        seeds = len(set(group.seeds))
        count = f"{len(group.runs)} runs" if seeds != len(group.runs) else f"{seeds} seed{'s' * (seeds != 1)}"
        group.label = " ".join(parts + shown) + f" ({count})" if parts else f"{group.runs[0]} ({count})"


def smooth(values: np.ndarray, k: int) -> np.ndarray:
    """Trailing moving average: point i is the mean of points i-k+1 .. i (fewer at the start)."""
    if k <= 1 or len(values) == 0:
        return values
    sums = np.cumsum(np.insert(values.astype(float), 0, 0.0))
    i = np.arange(1, len(values) + 1)
    start = np.maximum(0, i - k)
    return (sums[i] - sums[start]) / (i - start)


def on_grid(curves: list, finished: list) -> tuple:
    """``(grid, values)``: each run's ``(x, y)`` curve on the union of their x, NaN where it has no value."""
    grid = np.unique(np.concatenate([np.asarray(x, float) for x, _ in curves]))
    values = np.full((len(curves), len(grid)), np.nan)
    for row, ((x, y), done) in enumerate(zip(curves, finished)):
        x, y = np.asarray(x, float), np.asarray(y, float)
        inside = (grid >= x[0]) & (grid <= x[-1])
        values[row, inside] = np.interp(grid[inside], x, y)
        if done:
            values[row, grid > x[-1]] = y[-1]
    return grid, values


def mean(samples: np.ndarray) -> np.ndarray:
    """The mean along the last axis."""
    return samples.mean(axis=-1)


def iqm(samples: np.ndarray) -> np.ndarray:
    """Interquartile mean along the last axis: the mean of the middle half (a quarter cut from each end)."""
    n = samples.shape[-1]
    cut = n // 4
    return np.sort(samples, axis=-1)[..., cut:n - cut].mean(axis=-1)


def band(values: np.ndarray, statistic: Callable = mean, resamples: int = RESAMPLES,
         seed: int = BOOTSTRAP_SEED) -> tuple:
    """``(centre, low, high)`` per grid column over the runs with a value there (see the module docstring).

    A column with one run has its value as the centre and no band (NaN); one with none is NaN throughout.
    """
    rng = np.random.default_rng(seed)
    columns = values.shape[1]
    centre, low, high = (np.full(columns, np.nan) for _ in range(3))
    for j in range(columns):
        present = values[~np.isnan(values[:, j]), j]
        if len(present) == 0:
            continue
        centre[j] = statistic(present)
        if len(present) > 1:
            draws = present[rng.integers(0, len(present), size=(resamples, len(present)))]
            low[j], high[j] = np.percentile(statistic(draws), [2.5, 97.5])
    return centre, low, high

