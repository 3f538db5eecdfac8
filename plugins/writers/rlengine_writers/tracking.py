"""What the experiment trackers (``mlflow``, ``wandb``) share: the run's config, their run-id files, numbers.

A writer is handed only its own section, but a tracker records the whole
effective config. The engine writes it to ``<root_dir>/config.toml`` once the
run has started, before the first row, so the trackers read it there at
their first ``write()``. Each tracker keeps the id of its tracker-side run in
a small JSON file in the run directory, so a resumed rlengine run continues
the same tracker run.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
from typing import Any, Mapping, Optional

from rlengine import RLEngineError, write_atomically
from rlengine_writers.values import INDEX_KEYS, to_number

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CONFIG_FILE = "config.toml"


class TrackerError(RLEngineError):
    """A tracker cannot be reached, or the run directory's tracker run cannot be continued."""


def positive_number(instance: Any, attribute: Any, value: Any) -> None:
    """An attrs validator: a number (not a bool) above 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{attribute.name} must be a number > 0, got {value!r}")


def non_negative_number(instance: Any, attribute: Any, value: Any) -> None:
    """An attrs validator: a number (not a bool) of 0 or more."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ValueError(f"{attribute.name} must be a number >= 0, got {value!r}")


def require_modules(writer: str, package: str, modules: tuple) -> None:
    """One line naming the extra to install when one of a tracker writer's ``modules`` is missing.

    Looked up, not imported: importing a tracker takes long (docs/trackers.md): time
    the sender thread spends instead of the training loop.
    """
    for module in modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a module set to None in sys.modules, or without a spec
            found = False
        if not found:
            raise TrackerError(f'the {writer} writer needs {package}: pip install "rlengine-writers[{writer}]" '
                               f"(no module named {module!r})")


def run_config(root_dir: str) -> dict:
    """The run's effective config as nested dicts, from ``config.toml`` (written before the first row)."""
    path = os.path.join(root_dir, CONFIG_FILE)
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise TrackerError(f"cannot read the run's config {path!r} to record it: {exc}") from None


def flat_params(config: Mapping[str, Any]) -> dict[str, str]:
    """``{"section.key": text}`` of a nested config; strings as they are, anything else as JSON."""
    out = {}
    for section, values in config.items():
        for key, value in (values.items() if isinstance(values, Mapping) else [("", values)]):
            name = f"{section}.{key}" if key else section
            out[name] = value if isinstance(value, str) else json.dumps(value)
    return out


def numeric_metrics(metrics: Mapping[str, Any]) -> dict[str, float]:
    """The row's numeric scalars, without the keys that index it (``iteration``, ``env_steps``, ``wall_time``)."""
    out = {}
    for key, value in metrics.items():
        number = None if key in INDEX_KEYS else to_number(value)
        if number is not None:
            out[key] = float(number)
    return out


_UNSAFE = re.compile(r"[^\w\-. :/]")


def safe_key(key: str) -> str:
    """A metric name trackers accept: letters, digits, ``_ - . : /`` and spaces; anything else becomes ``_``."""
    return _UNSAFE.sub("_", key)


def read_json(path: str) -> Optional[dict]:
    """The JSON object in ``path``; None when there is no file. A damaged one is an error naming it."""
    try:
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise TrackerError(f"cannot read {path!r} ({exc}): delete it to start a new tracker run") from None
    if not isinstance(value, dict):
        raise TrackerError(f"{path!r} is not a JSON object: delete it to start a new tracker run")
    return value


def write_json(path: str, value: dict) -> None:
    """Write ``value`` to ``path`` as indented JSON, whole or not at all."""
    write_atomically(path, json.dumps(value, indent=2) + "\n")


def warn(writer: str, message: str) -> None:
    """One warning line on stderr, as rlengine prints them."""
    print(f"rlengine: warning: {writer}: {message}", file=sys.stderr, flush=True)
