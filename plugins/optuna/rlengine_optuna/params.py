"""The search space: ``--param section.key=KIND:SPEC``, one per tuned config key.

KIND is ``float:LOW:HIGH`` (uniform), ``loguniform:LOW:HIGH`` (uniform in
log space, for rates and coefficients spanning decades), ``int:LOW:HIGH``
(both ends included) or ``categorical:A,B,C``. Values are TOML, as in
``--set`` (bare words are strings, ``[64, 64]`` is a list). A sampled value
reaches the run as one more ``section.key=value`` override, so the core's
own validation checks it like any other.
"""

from __future__ import annotations

import difflib
import json
import sys
from typing import Any, Iterable

import attrs
import tomli_w

from rlengine import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

KINDS = ("float", "loguniform", "int", "categorical")
GRAMMAR = ("write section.key=KIND:SPEC with float:LOW:HIGH, loguniform:LOW:HIGH, int:LOW:HIGH or "
           "categorical:A,B,C (e.g. ppo.learning_rate=loguniform:1e-5:1e-2)")
#: Keys tune sets itself for every trial.
RESERVED = {"train.root_dir": "tune gives every trial its own root dir under --tune-dir"}


class ParamError(ConfigError):
    """A ``--param`` that cannot be parsed or does not fit the config."""


@attrs.frozen
class Param:
    """One tuned key: its Optuna distribution and how a sampled value becomes an override."""

    key: str  # section.key, also the parameter's name in the study
    kind: str  # one of KINDS
    low: Any = None  # float / loguniform / int
    high: Any = None
    choices: tuple = ()  # categorical: the TOML values
    labels: tuple = ()  # categorical: what Optuna stores for each choice (it takes scalars only)
    text: str = attrs.field(default="", eq=False)  # the --param as written, for messages

    def __str__(self) -> str:
        """The canonical text: two spellings of one search space compare equal (``1e-5`` = ``0.00001``)."""
        if self.kind == "categorical":
            return f"{self.key}=categorical:{','.join(_label_text(label) for label in self.labels)}"
        return f"{self.key}={self.kind}:{self.low!r}:{self.high!r}"

    def suggest(self, trial: Any) -> Any:
        """Ask ``trial`` (an ``optuna.Trial``) for a value; returns what Optuna stores (a label for categoricals)."""
        if self.kind == "float":
            return trial.suggest_float(self.key, self.low, self.high)
        if self.kind == "loguniform":
            return trial.suggest_float(self.key, self.low, self.high, log=True)
        if self.kind == "int":
            return trial.suggest_int(self.key, self.low, self.high)
        return trial.suggest_categorical(self.key, list(self.labels))

    def value_of(self, stored: Any) -> Any:
        """The config value of what Optuna stored for this param."""
        if self.kind != "categorical":
            return stored
        return self.choices[self.labels.index(stored)]

    def override(self, stored: Any) -> str:
        """The ``section.key=value`` override that sets the config key to what Optuna stored."""
        return f"{self.key}={toml_value(self.value_of(stored))}"

    def corners(self) -> list:
        """Values that bound the space (both ends, or every choice): each must be a valid config value."""
        return list(self.labels) if self.kind == "categorical" else [self.low, self.high]


def parse_params(texts: Iterable[str]) -> list[Param]:
    """Parse every ``--param``; a key given twice is refused."""
    params: list[Param] = []
    for text in texts:
        param = parse_param(text)
        if any(p.key == param.key for p in params):
            raise ParamError(f"--param {text!r}: {param.key} is tuned twice; give each key one --param")
        params.append(param)
    return params


def parse_param(text: str) -> Param:
    """``section.key=KIND:SPEC`` -> :class:`Param`, or a one-line :class:`ParamError` naming ``text``."""
    key, sep, spec = text.partition("=")
    key = key.strip()
    section, _, name = key.rpartition(".")
    if not sep or not section or not name:
        raise ParamError(f"--param {text!r} is not of the form section.key=KIND:SPEC; {GRAMMAR}")
    if key in RESERVED:
        raise ParamError(f"--param {text!r}: {key} cannot be tuned ({RESERVED[key]})")
    kind, _, rest = spec.strip().partition(":")
    if kind not in KINDS:
        near = difflib.get_close_matches(kind, KINDS, n=1, cutoff=0.5)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise ParamError(f"--param {text!r}: unknown kind {kind!r}{hint}; {GRAMMAR}")
    try:
        param = _categorical(key, rest) if kind == "categorical" else _range(key, kind, rest)
        return attrs.evolve(param, text=text)
    except ValueError as exc:
        raise ParamError(f"--param {text!r}: {exc}") from None


def _range(key: str, kind: str, spec: str) -> Param:
    parts = spec.split(":")
    if len(parts) != 2:
        raise ValueError(f"{kind} takes LOW:HIGH (e.g. {kind}:{'4:20' if kind == 'int' else '1e-4:1e-2'})")
    low, high = (parse_value(part) for part in parts)
    for bound in (low, high):
        numeric = isinstance(bound, (int, float)) and not isinstance(bound, bool)
        if not numeric or (kind == "int" and not isinstance(bound, int)):
            wanted = "integers" if kind == "int" else "numbers"
            raise ValueError(f"the bounds of {kind} must be {wanted}, got {bound!r}")
    if not low < high:
        raise ValueError(f"LOW must be below HIGH, got {low!r}:{high!r}")
    if kind == "loguniform" and low <= 0:
        raise ValueError(f"loguniform needs LOW > 0 (it samples in log space), got {low!r}")
    if kind != "int":
        low, high = float(low), float(high)
    return Param(key, kind, low, high)


def _categorical(key: str, spec: str) -> Param:
    items = split_choices(spec)
    if len(items) < 2 or any(not item for item in items):
        raise ValueError("categorical takes two or more comma-separated values (a fixed value is --set KEY=VALUE)")
    choices = tuple(parse_value(item) for item in items)
    labels = tuple(_label(choice) for choice in choices)
    if len(set(map(repr, labels))) < len(labels):
        raise ValueError("a categorical value is listed twice")
    return Param(key, "categorical", choices=choices, labels=labels)


def split_choices(spec: str) -> list[str]:
    """Split ``A,B,C`` on the commas outside brackets and quotes (``[64, 64],[128]`` is two choices)."""
    items, depth, quote, start = [], 0, "", 0
    for i, char in enumerate(spec):
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        elif char == "," and depth == 0:
            items.append(spec[start:i].strip())
            start = i + 1
    items.append(spec[start:].strip())
    return items


def parse_value(text: str) -> Any:
    """A TOML value, as ``--set`` reads one: bare words that are not TOML are strings."""
    try:
        return tomllib.loads(f"v = {text.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        return text.strip()


def toml_value(value: Any) -> str:
    """``value`` as one line of TOML, for an override the core parses back (``[64, 64]``, ``"relu"``)."""
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{tomli_w.dumps({k: 0}).split(' = ')[0]} = {toml_value(v)}"
                               for k, v in value.items()) + "}"
    return tomli_w.dumps({"v": value})[len("v = "):].strip()


def _label(choice: Any) -> Any:
    """Optuna stores None, bool, int, float or str: lists and tables are stored as their JSON text."""
    if isinstance(choice, (bool, int, float, str)):
        return choice
    return json.dumps(choice, separators=(", ", ": "), default=str)


def _label_text(label: Any) -> str:
    return json.dumps(label) if isinstance(label, str) else toml_value(label)
