"""``rlengine train --seeds 0-4``: one run per seed, each its own ``rlengine train`` child process.

Layout: ``--root-dir P`` is the *parent* of the runs, ``P/seed-N`` is seed N's
run directory and ``P/seed-N.log`` its console output (beside the run, not in
it: a run directory holds only what the run writes). The same command again
resumes the unfinished seeds and skips the finished ones, as a single run
resumes. A seed is finished when its newest checkpoint reached this command's
env-step budget, or its last evaluation reached the target return (the run
stopped there).

This process imports no TensorFlow: it reads the config only to name the
parent directory and the budget, and leaves building and validating the run
to the children (:mod:`rlengine.commands.seed_processes` starts and stops
them, and holds the command, ``train_seeds``).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
from typing import Any, Optional

import attrs

from rlengine.config import TrainConfig, apply_overrides, default_root_dir, starting_config
from rlengine.errors import RLEngineError

#: Measured on the project's 2-core machine (docs/seeds.md): 3 PPO CartPole seeds of 20k env steps finished
#: sooner two at a time than one after another (a run's imports and evaluations leave a core idle), so the
#: default runs as many at a time as there are cores.
DEFAULT_JOBS_TEXT = "one per core, each with its share of TensorFlow's threads; see docs/seeds.md"
PER_SEED_FLAGS = ("seed", "root_dir")  # the parent's flags that each child gets its own value of
SEED_NAME = re.compile(r"^seed-(\d+)(\.log)?$")
OS_LITTER = frozenset({".DS_Store", "Thumbs.db", "desktop.ini"})
METRICS_FILE = "metrics.jsonl"
EVAL_RETURN = "eval/average_return"


class SeedsError(RLEngineError):
    """``--seeds`` (or the directory it trains into) is not usable as given."""


# -- the flags ------------------------------------------------------------------------
def parse_seeds(text: str) -> list:
    """``"0-4"`` -> [0, 1, 2, 3, 4]; ``"0,2,5"`` and mixes (``"0-2,7"``) too; a one-line error otherwise."""
    seeds: list = []
    for part in str(text).split(","):
        part = part.strip()
        match = re.fullmatch(r"(\d+)(?:\s*-\s*(\d+))?", part)
        if match is None:
            raise SeedsError(f"--seeds {text!r}: {part!r} is not a seed or a range; write e.g. --seeds 0-4 "
                             "or --seeds 0,2,5")
        first, last = int(match[1]), int(match[2] if match[2] is not None else match[1])
        if last < first:
            raise SeedsError(f"--seeds {text!r}: the range {part!r} runs backwards; write {last}-{first}")
        seeds.extend(range(first, last + 1))
    repeated = sorted({s for s in seeds if seeds.count(s) > 1})
    if repeated:
        raise SeedsError(f"--seeds {text!r} names seed {repeated[0]} twice: list each seed once")
    too_big = [s for s in seeds if s > 2**32 - 1]
    if too_big:
        raise SeedsError(f"--seeds {text!r}: seed {too_big[0]} is above 4294967295 (train.seed's largest)")
    return seeds


def check_flags(args: argparse.Namespace, overrides: list) -> None:
    """The flags that cannot go with ``--seeds``, each a one-line error naming the fix."""
    if args.seeds is None:
        raise SeedsError("--jobs needs --seeds: e.g. rlengine train --seeds 0-4 --jobs 2")
    if args.seed is not None:
        raise SeedsError("--seed and --seeds together: pass --seed N for one run or --seeds LIST for one run "
                         "per seed, not both")
    if args.jobs is not None and args.jobs < 1:
        raise SeedsError(f"--jobs must be at least 1, got {args.jobs}")
    for item in overrides:
        key = item.split("=", 1)[0].strip()
        if key in ("train.seed", "train.root_dir"):
            flag = "--seeds" if key == "train.seed" else "--root-dir"
            raise SeedsError(f"--set {item!r} with --seeds: each seed's run gets its own {key}; use {flag}")


# -- the config the children will run ----------------------------------------------------
def with_preset(args: argparse.Namespace, overrides: list) -> argparse.Namespace:
    """``args``, with the preset the run would start from (:func:`rlengine.config.starting_config`) as its config.

    The parent chooses once and says so in one line; each child is then handed
    the preset's file as its config, so every seed trains the same settings
    (and its log's header names the file). Without a preset the children get
    no config, and ``--no-preset`` if this command has it.
    """
    if args.config or getattr(args, "no_preset", False):
        return args
    plugins = getattr(args, "plugins", None)
    if plugins is None:
        from rlengine.plugin.manager import build_plugins  # no TensorFlow

        plugins = build_plugins(disabled=args.disable_plugin)
    _, preset = starting_config(None, overrides, plugins.registries.presets, plugins.registries.graph_environments)
    if preset is None:
        return args
    print(preset.announcement(), flush=True)
    return argparse.Namespace(**{**vars(args), "config": preset.path})


def effective_train(config: Optional[str], overrides: list) -> dict:
    """The ``[train]`` table as :class:`rlengine.Engine` will read it, with TrainConfig's defaults filled in.

    Like the engine given no presets (:func:`with_preset` has made a chosen
    preset the config): the embedded demo config unless a file is given or the
    overrides choose another algorithm or env (then the defaults alone).
    """
    raw, _ = starting_config(config or None, overrides)
    train = apply_overrides(raw, overrides).get("train")
    defaults = {f.name: f.default for f in attrs.fields(TrainConfig)
                if not isinstance(f.default, attrs.Factory)}  # type: ignore[arg-type]  # Factory is a class
    return {**defaults, **(train if isinstance(train, dict) else {})}


def parent_dir(args: argparse.Namespace, train: dict) -> str:
    """``--root-dir``, else the config's ``train.root_dir``, else ``runs/<algorithm>-<env or dataset>-<time>`` (as a
    single run)."""
    if args.root_dir:
        return args.root_dir
    if train.get("root_dir"):
        return str(train["root_dir"])
    return default_root_dir(str(train["algorithm"]), str(train["env"]), str(train.get("dataset") or ""))


def check_parent(parent: str) -> None:
    """Refuse a parent that is a file, a single run's directory, or holds files other than seed runs."""
    if not os.path.lexists(parent):
        return
    if not os.path.isdir(parent):
        raise SeedsError(f"--root-dir {parent} is a file: with --seeds it is the directory of one run per seed; "
                         "choose another --root-dir")
    if any(os.path.exists(os.path.join(parent, name)) for name in (".rlengine-run", "config.toml")):
        raise SeedsError(f"--root-dir {parent} is a single run's directory: with --seeds it is the parent of one "
                         "run per seed (seed-N); choose a new --root-dir")
    foreign = sorted(n for n in os.listdir(parent) if not SEED_NAME.match(n) and n not in OS_LITTER)
    if foreign:
        raise SeedsError(f"--root-dir {parent} holds {foreign[0]!r}, which --seeds did not write (it writes seed-N "
                         "run directories and seed-N.log): choose a new or empty --root-dir")


# -- what a seed's run directory holds ---------------------------------------------------
def read_rows(path: str) -> list:
    """The whole JSON rows of a ``metrics.jsonl`` (a torn or missing file gives what there is)."""
    rows = []
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    row = json.loads(line)
                except ValueError:
                    continue
                if isinstance(row, dict):
                    rows.append(row)
    except OSError:
        pass
    return rows


def checkpoint_env_steps(run_dir: str) -> Optional[int]:
    """Env steps of the newest marked checkpoint (``checkpoints/ckpt-<n>.complete``), or None without one.

    Read from the marker's JSON (docs/resume.md), so this process needs no
    TensorFlow; a marker that cannot be read counts as absent.
    """
    best: Optional[tuple] = None
    for path in glob.glob(os.path.join(glob.escape(run_dir), "checkpoints", "ckpt-*.complete")):
        try:
            with open(path, encoding="utf-8") as f:
                marker = json.load(f)
            number = int(os.path.basename(path)[len("ckpt-"):-len(".complete")])
        except (OSError, ValueError):
            continue
        if isinstance(marker, dict) and isinstance(marker.get("env_steps"), int) and (best is None or number > best[0]):
            best = (number, marker["env_steps"])
    return None if best is None else best[1]


def last_eval(rows: list) -> Optional[tuple]:
    """``(env_steps, return)`` of the last evaluation row, or None."""
    for row in reversed(rows):
        value = row.get(EVAL_RETURN)
        if isinstance(value, (int, float)):
            return row.get("env_steps"), float(value)
    return None


def is_finished(run_dir: str, train: dict) -> bool:
    """Whether the run in ``run_dir`` is over: its checkpoint reached the budget, or it stopped at the target."""
    steps, budget, target = checkpoint_env_steps(run_dir), train.get("num_env_steps"), train.get("target_return")
    if steps is None:
        return False
    if isinstance(budget, int) and steps >= budget:  # a budget of the wrong type: the child names the mistake
        return True
    evaluation = last_eval(read_rows(os.path.join(run_dir, METRICS_FILE)))
    return (isinstance(target, (int, float)) and evaluation is not None and evaluation[0] == steps
            and evaluation[1] >= target)


def summary_of(run_dir: str) -> dict:
    """``env_steps`` and ``last_eval`` of a seed's run, for the progress lines and the summary table."""
    rows = read_rows(os.path.join(run_dir, METRICS_FILE))
    evaluation = last_eval(rows)
    steps = checkpoint_env_steps(run_dir)
    if steps is None and rows:
        steps = rows[-1].get("env_steps")
    return {"env_steps": steps, "last_eval": None if evaluation is None else evaluation[1]}


# -- a child's command line, the cores ------------------------------------------------------------
def child_argv(args: argparse.Namespace, overrides: list, seed: int, run_dir: str) -> list:
    """The ``rlengine`` words of one seed's run: the same global options, config and overrides."""
    words: list = ["--debug"] if getattr(args, "debug", False) else []
    for name in args.disable_plugin:
        words += ["--disable-plugin", name]
    words.append("train")
    if args.config:
        words.append(args.config)
    elif getattr(args, "no_preset", False):
        words.append("--no-preset")
    words += ["--seed", str(seed), "--root-dir", run_dir]
    for item in overrides:
        words += ["--set", item]
    return words + (["--force"] if args.force else [])


def cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS has one, e.g. a container's share)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def default_jobs() -> int:
    """Runs at a time without ``--jobs``: one per core (see DEFAULT_JOBS_TEXT)."""
    return cores()


def format_number(value: Any, spec: str = ".1f") -> str:
    return "-" if value is None else format(value, spec)
