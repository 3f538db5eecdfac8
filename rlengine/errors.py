"""Errors meant for users: each renders as one line naming the culprit and the fix."""

from __future__ import annotations

import difflib
from typing import Iterable


class RLEngineError(Exception):
    """Base class. ``str(err)`` is the one-line message shown to the user."""


class ConfigError(RLEngineError):
    """A config key is unknown, ill-typed or out of range."""


class PluginError(RLEngineError):
    """A plugin failed to load, register or validate."""


class RegistryError(RLEngineError):
    """A name is unknown, registered twice, or registered with the wrong type."""


class SpecMismatchError(RLEngineError):
    """A plugin produced tensors that do not match the prepared specs."""


def close_matches(name: str, choices: Iterable[str]) -> str:
    """A ' Did you mean ...?' suffix, or '' when nothing is close."""
    matches = difflib.get_close_matches(name, list(choices), n=3, cutoff=0.5)
    if not matches:
        return ""
    return " Did you mean " + " or ".join(repr(m) for m in matches) + "?"
