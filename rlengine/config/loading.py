"""Reading a run's configuration: TOML file (or the embedded default), ``--set section.key=value``
overrides, then validation against the engine's and the plugins' config classes. Every mistake is
a one-line :class:`ConfigError` naming the key."""

from __future__ import annotations

import collections
import os
import sys
import types
import typing
from typing import Any, Mapping, Optional

import attrs

from rlengine.config.schema import CORE_SECTIONS, RENAMED_KEYS, RunConfig, TrainConfig
from rlengine.errors import ConfigError, close_matches, telling_line

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DEFAULT_CONFIG = os.path.join(os.path.dirname(__file__), "default.toml")  # the demo: PPO on CartPole-v1


def read_toml(path: str) -> dict:
    """Parse a TOML file; syntax errors name the file and line."""
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise ConfigError(f"config file {path!r} does not exist") from None
    except IsADirectoryError:
        raise ConfigError(f"config file {path!r} is a directory; pass a TOML file") from None
    except OSError as exc:  # no permission to read it, an I/O error
        raise ConfigError(f"cannot read config file {path!r}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config file {path!r} is not UTF-8 text (byte {exc.object[exc.start:exc.start + 1]!r} "
                          f"at offset {exc.start}); TOML files must be UTF-8: re-save it as UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path!r} is not valid TOML: {exc}") from None


def apply_overrides(raw: dict, overrides: list[str]) -> dict:
    """Apply ``section.key=value`` strings; values are TOML (bare words are strings)."""
    raw = {k: dict(v) if isinstance(v, dict) else v for k, v in raw.items()}
    for item in overrides:
        key, sep, text = item.partition("=")
        if not sep or "." not in key:
            raise ConfigError(f"--set {item!r} is not of the form section.key=value (e.g. train.seed=3)")
        section, _, name = key.strip().rpartition(".")
        table = raw.setdefault(section, {})
        if not isinstance(table, dict):
            raise ConfigError(f"--set {item!r}: {section!r} is {table!r} in the config, not a [{section}] table")
        table[name] = parse_value(text.strip())
    return raw


def parse_value(text: str) -> Any:
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def build_config(raw: Mapping[str, Any], config_classes: Mapping[str, type]) -> RunConfig:
    """Validate a raw TOML dict against the engine's and the plugins' classes."""
    # looked up by the sections ``raw`` names only: a plugin's class is imported when its section is used
    config_classes = collections.ChainMap({k: v for k, v in CORE_SECTIONS.items() if k != "train"},
                                          config_classes)  # type: ignore[arg-type]  # only read
    unknown = [name for name in raw if name != "train" and name not in config_classes]
    if unknown:
        raise ConfigError(
            f"config section [{unknown[0]}] matches no loaded plugin; known sections: "
            f"train, {', '.join(sorted(config_classes))}." + close_matches(unknown[0], ["train", *config_classes])
        )
    train = make_section("train", TrainConfig, raw.get("train", {}))
    sections = {name: make_section(name, config_classes[name], values) for name, values in raw.items()
                if name != "train"}
    return RunConfig(train=train, sections=sections)


def make_section(section: str, cls: type, values: Any) -> Any:
    """Instantiate ``cls`` from ``values``, with one-line errors naming ``section.key``."""
    if not isinstance(values, Mapping):
        raise ConfigError(f"[{section}] must be a table of keys, got {values!r}")
    fields = {f.name: f for f in attrs.fields(cls)}
    hints = typing.get_type_hints(cls)
    for key, value in values.items():
        renamed = RENAMED_KEYS.get(f"{section}.{key}")
        if renamed is not None:
            raise ConfigError(f"config key {section}.{key} was renamed to {renamed}: write "
                              f"{renamed} = {_toml_value(value)} instead")
        if key not in fields:
            raise ConfigError(
                f"unknown config key {section}.{key}; [{section}] takes: {', '.join(fields)}."
                + close_matches(key, fields)
            )
        _check_type(f"{section}.{key}", value, hints.get(key, Any))
    try:
        return cls(**values)
    except (TypeError, ValueError) as exc:
        # attrs validators say "'num_envs' must be > 0: 0", which names the key; some (in_, instance_of)
        # pass the attribute and the options along as further arguments, which str() would print too
        message = exc.args[0] if exc.args and isinstance(exc.args[0], str) else str(exc)
        raise ConfigError(f"invalid value in [{section}]: {telling_line(message) or type(exc).__name__}") from None


def _toml_value(value: Any) -> str:
    import tomli_w

    return tomli_w.dumps({"v": value})[4:].strip()


def _check_type(key: str, value: Any, hint: Any) -> None:
    allowed = _allowed_types(hint)
    if allowed is None:
        return
    # bool is an int subclass in Python, but `num_envs = true` is a mistake.
    if isinstance(value, allowed) and not (isinstance(value, bool) and bool not in allowed):
        return
    names = " or ".join(sorted({t.__name__ for t in allowed}))
    raise ConfigError(f"config key {key} must be {names}, got {value!r} ({type(value).__name__})")


def _allowed_types(hint: Any) -> Optional[tuple]:
    """Python types a TOML value may have for an annotation (None: anything)."""
    origin = typing.get_origin(hint)
    if hint is Any:
        return None
    if origin is typing.Union or origin is types.UnionType:  # Optional[X] and X | None
        parts = [_allowed_types(a) for a in typing.get_args(hint)]
        if any(p is None for p in parts):
            return None
        return tuple(t for p in parts if p is not None for t in p)
    if hint is type(None):
        return (type(None),)
    if hint is float:
        return (float, int)
    if origin in (list, tuple) or hint in (list, tuple):
        return (list, tuple)
    if origin is dict or hint is dict:
        return (dict,)
    return (hint,) if isinstance(hint, type) else None
