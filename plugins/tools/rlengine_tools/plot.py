"""``rlengine plot``: learning curves of one or more runs from their ``metrics.jsonl``.

A directory that is not a run stands for the runs under it (``rlengine
train --seeds`` writes ``P/seed-N``). Runs are grouped by config
(:mod:`rlengine_tools.bands`); when a group holds several seeds, each group
is drawn as its mean (or ``--iqm``) against env steps with a bootstrapped 95%
band, labelled by the keys that tell the groups apart.

The members of a population (``rlengine tune --ray --pbt``: ``member-k/gen-g``) are drawn one line
each, its generations joined where each began (:mod:`rlengine_tools.lineage`).

Otherwise (every run its own config, or ``--no-groups``) the runs are
overlaid in two panels, return against env steps and against wall time, each
in its own colour and labelled by its directory name: the chosen metric (by
default the evaluation return) as a solid line with markers, and the training
episode return as a faint line of the same colour.

``--smooth K`` replaces each run's values by their trailing moving average
over the last K points, before anything else.
"""

from __future__ import annotations

import difflib
import math
import os
from typing import Any, Iterable

import attrs
import numpy as np

from rlengine import RLEngineError
from rlengine_tools import bands, lineage
from rlengine_tools.runs import cumulative_wall_time, find_runs, is_run, read_config, read_rows, status_of

__all__ = ["Curve", "cumulative_wall_time", "draw", "load_curves", "plot_dirs", "plot_runs", "read_rows"]

METRICS_FILE = "metrics.jsonl"
EVAL_RETURN = "eval/average_return"
TRAIN_RETURN = "train/episode_return"
X_AXES = (("env_steps", "env steps"), ("wall_time", "wall time (s)"))


@attrs.define
class Curve:
    """One metric of one run: points as (env_steps, wall_time, value)."""

    label: str
    metric: str
    points: list = attrs.field(factory=list)


def metrics_path(root_dir: str) -> str:
    """``root_dir/metrics.jsonl``, or a one-line error naming what is missing."""
    if not os.path.isdir(root_dir):
        raise RLEngineError(f"run directory {root_dir!r} does not exist: pass directories written by "
                            "'rlengine train', e.g. rlengine plot runs/<run-name> --out curve.png")
    path = os.path.join(root_dir, METRICS_FILE)
    if not os.path.isfile(path):
        raise RLEngineError(f"{root_dir!r} has no {METRICS_FILE}: it is written by the jsonl writer, so train "
                            f"with \"jsonl\" in train.writers (the default), or pass another run directory")
    return path


def run_dirs(paths: Iterable[str]) -> list:
    """Each path if it is a run, else the runs under it (a missing path: the one-line error of metrics_path)."""
    out: list = []
    for path in map(str, paths):
        if not os.path.isdir(path):
            metrics_path(path)  # raises, naming what is wrong
        out.extend([path] if is_run(path) else find_runs(path))
    return out


def curves_of(rows: list, label: str, metrics: Iterable[str]) -> list:
    """One :class:`Curve` per metric that has at least one finite value in ``rows``."""
    times = cumulative_wall_time(rows)
    out = []
    for metric in metrics:
        curve = Curve(label, metric)
        for row, t in zip(rows, times):
            value = row.get(metric)
            if isinstance(value, (int, float)) and math.isfinite(value) and t is not None:
                curve.points.append((row.get("env_steps", 0), t, value))
        if curve.points:
            out.append(curve)
    return out


def run_label(root_dir: str) -> str:
    return os.path.basename(os.path.normpath(root_dir)) or root_dir


def smoothed(curve: Curve, k: int) -> Curve:
    """``curve`` with its values replaced by their trailing moving average over ``k`` points."""
    values = bands.smooth(np.array([p[2] for p in curve.points], float), k)
    curve.points = [(x, t, float(v)) for (x, t, _), v in zip(curve.points, values)]
    return curve


def load_curves(root_dirs: Iterable[str], metric: str, smooth: int = 1, members: Iterable[str] = ()) -> list:
    """Curves of ``metric`` (and the training episode return) for every run, and for every member of a
    population (:mod:`rlengine_tools.lineage`), smoothed over ``smooth`` points."""
    metrics = [metric] if metric == TRAIN_RETURN else [metric, TRAIN_RETURN]
    curves: list = []
    seen_keys: set = set()
    sources = [(run_label(r), read_rows(metrics_path(r))) for r in root_dirs]
    sources += [(run_label(m), lineage.member_rows(m, read_rows)) for m in members]
    for label, rows in sources:
        seen_keys.update(k for row in rows for k in row)
        curves.extend(smoothed(c, smooth) for c in curves_of(rows, label, metrics))
    if not any(c.metric == metric for c in curves):
        numeric = sorted(k for k in seen_keys if k not in ("iteration", "env_steps", "wall_time"))
        raise RLEngineError(f"no run has values of metric {metric!r} in its {METRICS_FILE}." +
                            (close_matches(metric, numeric) or f" Its metrics: {', '.join(numeric)}")
                            + " Pass one with --metric")
    return curves


def close_matches(name: str, choices: Iterable[str]) -> str:
    """A ' Did you mean ...?' suffix naming up to three close choices, or ''."""
    matches = difflib.get_close_matches(name, list(choices), n=3, cutoff=0.5)
    return " Did you mean " + " or ".join(repr(m) for m in matches) + "?" if matches else ""


def pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise RLEngineError("plotting needs matplotlib: pip install rlengine-tools") from None
    matplotlib.use("Agg")  # files only: no display needed
    import matplotlib.pyplot as plt

    return plt


def save(figure: Any, out: str) -> None:
    """Write ``figure`` to ``out`` (its extension picks the format), then close it."""
    plt = pyplot()
    try:
        figure.savefig(out, dpi=100)
    except (OSError, ValueError) as err:
        raise RLEngineError(f"cannot write the plot to {out!r}: {err}") from None
    finally:
        plt.close(figure)


def draw(curves: list, out: str, metric: str) -> None:
    """Draw both panels and save the figure to ``out`` (its extension picks the format)."""
    plt = pyplot()
    labels = list(dict.fromkeys(c.label for c in curves))
    colours = {label: f"C{i % 10}" for i, label in enumerate(labels)}
    figure, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
    for panel, (axis, (key, name)) in enumerate(zip(axes, X_AXES)):
        for curve in curves:
            x = [p[0] if key == "env_steps" else p[1] for p in curve.points]
            y = [p[2] for p in curve.points]
            main = curve.metric == metric
            axis.plot(x, y, color=colours[curve.label], alpha=1.0 if main else 0.35,
                      linewidth=1.8 if main else 1.0, marker="o" if main and len(x) < 60 else None,
                      markersize=3, label=f"{curve.label} ({curve.metric})")
        axis.set_xlabel(name)
        axis.grid(True, alpha=0.3)
    axes[0].set_ylabel("return")
    axes[0].legend(fontsize=8, loc="best")
    figure.suptitle(metric if metric == TRAIN_RETURN else f"{metric} (solid) and {TRAIN_RETURN} (faint)")
    figure.tight_layout()
    save(figure, out)


def plot_runs(root_dirs: Iterable[str], out: str, metric: str = EVAL_RETURN, smooth: int = 1) -> list:
    """Overlay the runs' curves in ``out``; returns the curves drawn."""
    curves = load_curves(root_dirs, metric, smooth)
    draw(curves, out, metric)
    return curves


def plot_dirs(paths: Iterable[str], out: str, metric: str = EVAL_RETURN, smooth: int = 1, iqm: bool = False,
              groups: bool = True) -> str:
    """Plot the runs in ``paths`` into ``out``, grouped when a config has several seeds; what was drawn, in words."""
    if smooth < 1:
        raise RLEngineError(f"--smooth must be at least 1 (1: no smoothing), got {smooth}")
    runs = run_dirs(paths)
    named = {os.path.normpath(str(p)) for p in paths}  # a generation named on its own is drawn as its run
    members, others = lineage.split_members(runs, named)
    if members:  # a population: a line per member, not per generation, and no groups (each member has its own)
        curves = load_curves(others, metric, smooth, members)
        draw(curves, out, metric)
        return (f"{len(members)} member{'s' * (len(members) != 1)} of a population, one line each over its "
                f"generations" + (f", and {len(others)} other run{'s' * (len(others) != 1)}" if others else ""))
    grouped = bands.group_runs(runs, read_config) if groups else []
    if any(len(set(g.seeds)) > 1 for g in grouped):
        drawn = plot_groups(grouped, out, metric, smooth, iqm)
        return f"{len(runs)} runs in {len(drawn)} group{'s' * (len(drawn) != 1)}: " + "; ".join(g.label for g in drawn)
    curves = plot_runs(runs, out, metric, smooth)
    return f"{len(runs)} run{'s' * (len(runs) != 1)}, {len(curves)} curves"


# -- groups of seeds ---------------------------------------------------------------------
def group_curves(group: bands.Group, metric: str, smooth: int) -> list:
    """``(run, seed, (x, y), finished)`` of each run of ``group`` with values of ``metric``, ``y`` smoothed."""
    out = []
    for run, seed in zip(group.runs, group.seeds):
        rows = read_rows(metrics_path(run))
        points = [(r["env_steps"], r[metric]) for r in rows if isinstance(r.get(metric), (int, float))
                  and math.isfinite(r[metric]) and isinstance(r.get("env_steps"), (int, float))]
        if points:
            x, y = zip(*sorted(points))
            curve = (np.array(x, float), bands.smooth(np.array(y, float), smooth))
            out.append((run, seed, curve, status_of(run, read_config(run), rows) == "finished"))
    return out


def plot_groups(groups: list, out: str, metric: str, smooth: int = 1, iqm: bool = False) -> list:
    """Draw each group's mean (or IQM) and bootstrapped 95% band against env steps, each run as a faint line;
    returns the groups drawn."""
    statistic, name = (bands.iqm, "IQM") if iqm else (bands.mean, "mean")
    drawn = []
    for group in groups:
        kept = group_curves(group, metric, smooth)
        if kept:  # a run without values of the metric (e.g. killed before its first evaluation) is left out
            group.runs, group.seeds = [k[0] for k in kept], [k[1] for k in kept]
            drawn.append((group, [k[2] for k in kept], [k[3] for k in kept]))
    if not drawn:  # the overlay's loader names the metrics the runs do have
        load_curves([run for g in groups for run in g.runs], metric)
    bands.group_labels([group for group, _, _ in drawn])
    plt = pyplot()
    figure, axis = plt.subplots(figsize=(9, 5))
    held = False
    for i, (group, curves, finished) in enumerate(drawn):
        grid, values = bands.on_grid(curves, finished)
        centre, low, high = bands.band(values, statistic)
        colour = f"C{i % 10}"
        for x, y in curves:
            axis.plot(x, y, color=colour, alpha=0.3, linewidth=0.8)
        axis.plot(grid, centre, color=colour, linewidth=2.2, label=group.label)
        axis.fill_between(grid, low, high, color=colour, alpha=0.2, linewidth=0)
        held = held or any(done and x[-1] < grid[-1] for (x, _), done in zip(curves, finished))
    axis.set_xlabel("env steps")
    axis.set_ylabel(metric)
    axis.grid(True, alpha=0.3)
    axis.legend(fontsize=9, loc="best")
    smoothing = f", smoothed over {smooth} points" if smooth > 1 else ""
    note = "\nfaint: each seed; a run that finished early (at its target) keeps its last value" if held \
        else "; faint: each seed"
    axis.set_title(f"{name} over seeds; shaded: 95% bootstrap confidence interval ({bands.RESAMPLES} resamples)"
                   f"{smoothing}{note}", fontsize=10)
    figure.tight_layout()
    save(figure, out)
    return [group for group, _, _ in drawn]
