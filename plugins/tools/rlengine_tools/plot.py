"""``rlengine plot``: learning curves of one or more runs from their ``metrics.jsonl``.

Two panels, return against env steps and against wall time, with every run
overlaid in its own colour and labelled by its directory name: the chosen
metric (by default the evaluation return) as a solid line with markers, and
the training episode return as a faint line of the same colour.
"""

from __future__ import annotations

import difflib
import json
import math
import os
from typing import Iterable

import attrs

from rlengine import RLEngineError

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


def read_rows(path: str) -> list:
    """Every complete JSON row; a torn last line (a run killed mid-write) is skipped."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # only a crash mid-row leaves such a line; the rows around it are whole
    return rows


def cumulative_wall_time(rows: list) -> list:
    """Wall time that keeps growing across resumes (each process restarts its clock at 0)."""
    out: list = []
    offset, last = 0.0, None
    for row in rows:
        t = row.get("wall_time")
        if not isinstance(t, (int, float)):
            out.append(None)
            continue
        if last is not None and t < last:
            offset += last  # a resumed process: continue from where the previous one stopped
        last = t
        out.append(t + offset)
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


def load_curves(root_dirs: Iterable[str], metric: str) -> list:
    """Curves of ``metric`` (and the training episode return) for every run."""
    metrics = [metric] if metric == TRAIN_RETURN else [metric, TRAIN_RETURN]
    curves: list = []
    seen_keys: set = set()
    for root_dir in root_dirs:
        rows = read_rows(metrics_path(root_dir))
        seen_keys.update(k for row in rows for k in row)
        curves.extend(curves_of(rows, run_label(root_dir), metrics))
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


def draw(curves: list, out: str, metric: str) -> None:
    """Draw both panels and save the figure to ``out`` (its extension picks the format)."""
    try:
        import matplotlib
    except ImportError:
        raise RLEngineError("plotting needs matplotlib: pip install rlengine-tools") from None
    matplotlib.use("Agg")  # files only: no display needed
    import matplotlib.pyplot as plt

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
    try:
        figure.savefig(out, dpi=100)
    except (OSError, ValueError) as err:
        raise RLEngineError(f"cannot write the plot to {out!r}: {err}") from None
    finally:
        plt.close(figure)


def plot_runs(root_dirs: Iterable[str], out: str, metric: str = EVAL_RETURN) -> list:
    """Plot the runs' curves into ``out``; returns the curves drawn."""
    curves = load_curves(root_dirs, metric)
    draw(curves, out, metric)
    return curves
