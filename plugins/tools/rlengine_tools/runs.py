"""``rlengine runs DIR``: a table of the runs under DIR, and reading what a run directory holds.

A run directory is what ``rlengine train`` writes: ``config.toml``,
``metrics.jsonl``, ``checkpoints/``; ``rlengine train --seeds`` writes one per
seed under a parent (``P/seed-N``). DIR is a run itself, or the runs are its
children and grandchildren (``runs/`` holding seed parents).

A run's status comes from what is on disk, never from a guess:

* ``running``: a process holds the OS lock on its lock file
  ``.rlengine.lock`` (the file stays after a ``kill -9``, but the lock goes
  with the process; a lock file of another host counts as running);
* ``finished``: its newest checkpoint (the marker
  ``checkpoints/ckpt-<n>.complete`` records its ``env_steps``) reached the
  budget ``train.num_env_steps``, or the last evaluation, at that
  checkpoint, reached ``train.target_return`` (the run stops there);
* ``interrupted``: anything else; the same ``rlengine train`` command resumes it.

Nothing here imports TensorFlow.
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
import re
import socket
import sys
from typing import Any, Optional

import attrs

from rlengine import Command, RLEngineError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CONFIG_FILE = "config.toml"
METRICS_FILE = "metrics.jsonl"
MARKER_FILE = ".rlengine-run"  # written when a run first starts
LOCK_FILE = ".rlengine.lock"  # names the training process while it runs
EVAL_RETURN = "eval/average_return"
COLUMNS = ("run", "algorithm", "env", "seed", "env steps", "best eval", "last eval", "status", "wall time")


class NoRunsError(RLEngineError):
    """A directory given to ``runs`` or ``plot`` holds no run."""


# -- finding runs -------------------------------------------------------------------------
def is_run(path: str) -> bool:
    """Whether ``path`` is a run directory (its config, marker or metrics are there, or a run is starting in it)."""
    return any(os.path.isfile(os.path.join(path, name))
               for name in (CONFIG_FILE, MARKER_FILE, METRICS_FILE, LOCK_FILE))


def natural_key(name: str) -> list:
    """Sort key putting ``seed-2`` before ``seed-10``."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def _subdirs(path: str) -> list:
    try:
        names = sorted(os.listdir(path), key=natural_key)
    except OSError:
        return []
    return [os.path.join(path, n) for n in names if not n.startswith(".") and os.path.isdir(os.path.join(path, n))]


def find_runs(directory: str) -> list:
    """``directory`` if it is a run, else the runs among its children and grandchildren; a one-line error if none."""
    if not os.path.isdir(directory):
        what = "is a file" if os.path.exists(directory) else "does not exist"
        raise NoRunsError(f"{directory!r} {what}: pass a run directory of 'rlengine train', or a directory "
                          "holding runs (e.g. the --root-dir of rlengine train --seeds)")
    if is_run(directory):
        return [directory]
    found = []
    for child in _subdirs(directory):
        found.extend([child] if is_run(child) else [g for g in _subdirs(child) if is_run(g)])
    if not found:
        raise NoRunsError(f"{directory!r} holds no run (no {CONFIG_FILE} in it, its subdirectories or theirs): pass "
                          "the --root-dir of an 'rlengine train' run, or a directory holding such runs")
    return found


# -- reading one run ------------------------------------------------------------------------
def read_rows(path: str) -> list:
    """Every complete JSON row; a torn last line (a run killed mid-write) is skipped. Other lines that are
    not JSON rows (a file damaged, or not written by rlengine) are skipped too, with one warning naming it."""
    rows, bad = [], []
    with open(path, "rb") as f:
        lines = [line.strip() for line in f]
    for number, line in enumerate(lines, 1):
        if not line:
            continue
        try:
            row = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            bad.append(number)
            continue
        if isinstance(row, dict):
            rows.append(row)
    if bad and bad != [len(lines)]:  # only a crash mid-row leaves a bad line, and only as the last one
        print(f"rlengine: warning: {path}: {len(bad)} of its {len(lines)} lines are not JSON rows (first: line "
              f"{bad[0]}); read the {len(rows)} that are. rlengine did not write it so: move it aside if it is "
              "not the run's (its checkpoints are separate and unaffected)", file=sys.stderr)
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


def read_config(run_dir: str) -> dict:
    """The run's ``config.toml`` as a dict; {} when it is missing or unreadable (the table then shows '-')."""
    try:
        with open(os.path.join(run_dir, CONFIG_FILE), "rb") as f:
            return tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return {}


def run_rows(run_dir: str) -> list:
    path = os.path.join(run_dir, METRICS_FILE)
    return read_rows(path) if os.path.isfile(path) else []


def checkpoint_env_steps(run_dir: str) -> Optional[int]:
    """Env steps recorded by the marker of the newest checkpoint, or None without one."""
    newest: Optional[tuple] = None
    for path in glob.glob(os.path.join(glob.escape(run_dir), "checkpoints", "ckpt-*.complete")):
        try:
            number = int(os.path.basename(path)[len("ckpt-"):-len(".complete")])
            with open(path, encoding="utf-8") as f:
                marker = json.load(f)
        except (OSError, ValueError):
            continue
        if isinstance(marker, dict) and isinstance(marker.get("env_steps"), int):
            newest = max(newest or (number, 0), (number, marker["env_steps"]))
    return None if newest is None else newest[1]


def is_running(run_dir: str) -> bool:
    """Whether a live process holds the run's lock (a lock file left by a killed one names a dead process)."""
    try:
        with open(os.path.join(run_dir, LOCK_FILE), encoding="utf-8") as f:
            holder = json.load(f)
    except (OSError, ValueError):
        return False
    if not isinstance(holder, dict) or not isinstance(holder.get("pid"), int):
        return False
    if holder.get("host") not in (None, socket.gethostname()):
        return True  # another machine's process: it cannot be checked from here, and its lock file is there
    return lock_is_held(os.path.join(run_dir, LOCK_FILE))


def lock_is_held(path: str) -> bool:
    """Whether a process holds the run's OS lock on ``path``: the OS lets it go when its process dies, where
    the pid written in the file may by then be another, live process's."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover (Windows: the file exists only while a run holds it, or after a kill)
        return True
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # the trainer holds LOCK_EX while it runs
    except OSError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def evaluations(rows: list) -> list:
    """``(env_steps, return)`` of every evaluation row with a finite return."""
    return [(row.get("env_steps"), float(row[EVAL_RETURN])) for row in rows
            if isinstance(row.get(EVAL_RETURN), (int, float)) and math.isfinite(row[EVAL_RETURN])]


def status_of(run_dir: str, config: dict, rows: list) -> str:
    """``running``, ``finished`` or ``interrupted`` (see the module docstring)."""
    if is_running(run_dir):
        return "running"
    train = config.get("train", {}) if isinstance(config.get("train"), dict) else {}
    steps = checkpoint_env_steps(run_dir)
    if steps is None:
        return "interrupted"
    budget, target, evals = train.get("num_env_steps"), train.get("target_return"), evaluations(rows)
    if isinstance(budget, int) and steps >= budget:
        return "finished"
    reached = isinstance(target, (int, float)) and evals and evals[-1][0] == steps and evals[-1][1] >= target
    return "finished" if reached else "interrupted"


@attrs.frozen
class RunInfo:
    """One row of the ``runs`` table."""

    path: str
    algorithm: Optional[str]
    env: Optional[str]
    seed: Optional[int]
    env_steps: Optional[int]
    best_eval: Optional[float]
    last_eval: Optional[float]
    status: str
    wall_time: Optional[float]  # seconds over every process of the run (resumes included)


def run_info(run_dir: str) -> RunInfo:
    config, rows = read_config(run_dir), run_rows(run_dir)
    train = config.get("train", {}) if isinstance(config.get("train"), dict) else {}
    evals = [value for _, value in evaluations(rows)]
    steps = next((r["env_steps"] for r in reversed(rows) if isinstance(r.get("env_steps"), int)), None)
    times = [t for t in cumulative_wall_time(rows) if t is not None]
    return RunInfo(run_dir, train.get("algorithm"), train.get("env"), train.get("seed"),
                   steps if steps is not None else checkpoint_env_steps(run_dir), max(evals, default=None),
                   evals[-1] if evals else None, status_of(run_dir, config, rows), times[-1] if times else None)


# -- the table ------------------------------------------------------------------------------
def duration(seconds: Optional[float]) -> str:
    if seconds is None:
        return "-"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(round(seconds)), 60)
    return f"{minutes}m{secs:02d}s" if minutes < 60 else f"{minutes // 60}h{minutes % 60:02d}m"


def cells(info: RunInfo, base: str) -> tuple:
    def text(value: Any, spec: str = "") -> str:
        return "-" if value is None else format(value, spec)

    name = os.path.relpath(info.path, base) if info.path != base else os.path.basename(os.path.abspath(base))
    return (name, text(info.algorithm), text(info.env), text(info.seed), text(info.env_steps),
            text(info.best_eval, ".1f"), text(info.last_eval, ".1f"), info.status, duration(info.wall_time))


def table(infos: list, base: str) -> str:
    """The runs as an aligned text table (numbers right-aligned)."""
    rows = [COLUMNS, *(cells(info, base) for info in infos)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    numeric = {3, 4, 5, 6, 8}
    return "\n".join("  ".join(c.rjust(w) if i in numeric else c.ljust(w)
                               for i, (c, w) in enumerate(zip(row, widths))).rstrip() for row in rows)


class Runs(Command):
    help = "list the runs under a directory: algorithm, env, seed, env steps, returns, status, wall time"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("directory", metavar="DIR",
                            help="a run directory, or one holding runs (e.g. the --root-dir of train --seeds)")

    def run(self, args: argparse.Namespace) -> int:
        infos = [run_info(path) for path in find_runs(args.directory)]
        print(table(infos, args.directory))
        return 0
