"""What a tune leaves for people: the table of its trials and ``best.toml``."""

from __future__ import annotations

import os
from typing import Any, Optional

import optuna
import tomli_w
from optuna.trial import TrialState

from rlengine import write_atomically
from rlengine_optuna.study import user_attr

BEST_FILE = "best.toml"
COLUMNS = ("trial", "state", "value", "env steps", "seconds", "params", "note")


def trial_table(study: optuna.Study, params: list) -> list[str]:
    """One line per trial (number, state, value, env steps, seconds, params, why it was pruned or failed)."""
    rows = [COLUMNS] + [_row(trial, params) for trial in study.get_trials(deepcopy=False)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    numeric = {0, 2, 3, 4}  # right-aligned
    lines = []
    for row in rows:
        cells = [cell.rjust(w) if i in numeric else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths))]
        lines.append("  ".join(cells).rstrip())
    return lines


def _row(trial: optuna.trial.FrozenTrial, params: list) -> tuple:
    seconds = user_attr(trial, "seconds")
    if seconds is None and trial.datetime_start and trial.datetime_complete:
        seconds = (trial.datetime_complete - trial.datetime_start).total_seconds()
    env_steps = user_attr(trial, "env_steps")
    return (str(trial.number), trial.state.name, "-" if trial.value is None else f"{trial.value:.1f}",
            "-" if env_steps is None else str(env_steps), "-" if seconds is None else f"{seconds:.1f}",
            describe(trial.params, params), _note(trial))


def _note(trial: optuna.trial.FrozenTrial) -> str:
    note = user_attr(trial, "reason", "")
    retry_of = user_attr(trial, "retry_of")
    if retry_of is not None:
        note = f"redo of trial {retry_of}" + (f"; {note}" if note else "")
    return note


def describe(values: dict, params: list) -> str:
    """``key=value`` for every tuned param, in --param order (short floats)."""
    return " ".join(f"{p.key}={_short(p.value_of(values[p.key]))}" for p in params if p.key in values)


def _short(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def counts(study: optuna.Study) -> dict:
    """Trials per state name (COMPLETE, PRUNED, FAIL, ...)."""
    out: dict = {}
    for trial in study.get_trials(deepcopy=False):
        out[trial.state.name] = out.get(trial.state.name, 0) + 1
    return out


def best_trial(study: optuna.Study) -> Optional[optuna.trial.FrozenTrial]:
    """The complete trial of the highest value, or None before any completed."""
    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    return max(complete, key=lambda t: t.value) if complete else None


def write_best(tune_dir: str, trial: optuna.trial.FrozenTrial, config: dict, objective: str) -> str:
    """Write ``best.toml`` atomically: ``config`` (the trial's full effective config), headed by comments."""
    config = {section: dict(table) for section, table in config.items()}
    config.get("train", {}).pop("root_dir", None)  # `rlengine train best.toml` picks its own root dir
    budget = config.get("train", {}).get("num_env_steps")
    path = os.path.join(tune_dir, BEST_FILE)
    header = [f"# The best trial of the study in {tune_dir}: trial {trial.number}, value {trial.value:.2f}",
              f"# ({objective}). Written by rlengine tune; train it with: rlengine train {path}",
              f"# Trials trained for train.num_env_steps = {budget}: raise it (--num-env-steps) for a full run.", ""]
    text = "\n".join(header) + tomli_w.dumps(config)
    write_atomically(path, text)
    return path
