"""From the id a run names (``envpool/Pong-v5``) to EnvPool's task id, and EnvPool itself, imported here only.

A missing EnvPool and an unknown task are each one ``ConfigError``: the first names the pip command, the
second the closest task ids and the families EnvPool knows, with one id of each.
"""

from __future__ import annotations

import difflib
import importlib
from typing import Any, NamedTuple

from rlengine import ConfigError

__all__ = ["INSTALL", "PREFIX", "Task", "resolve_task"]

PREFIX = "envpool/"
INSTALL = 'pip install "envpool>=1.2.5,<1.3"'
_ATARI = "envpool.atari"


class Task(NamedTuple):
    """One resolved id: EnvPool's module, its task id, and which family's conventions apply."""

    envpool: Any  # the imported envpool package
    name: str  # EnvPool's task id, e.g. "Pong-v5"
    family: str  # EnvPool's module of the task without "envpool.", e.g. "atari", "mujoco.gym"

    @property
    def is_atari(self) -> bool:
        return self.family == _ATARI.removeprefix("envpool.")


def resolve_task(env_id: str) -> Task:
    """The task ``env_id`` names; ``ConfigError`` when EnvPool is missing or does not know it."""
    name = env_id.removeprefix(PREFIX)
    if not env_id.startswith(PREFIX) or not name:
        raise ConfigError(f"environment {env_id!r} names no EnvPool task: use envpool/<task id>, e.g. "
                          f"--env envpool/CartPole-v1")
    envpool = _import_envpool(env_id)
    specs = envpool.registration.registry.specs
    if name not in specs:
        raise ConfigError(f"unknown EnvPool task {name!r} in {env_id!r}.{_suggest(name, specs)} "
                          f"EnvPool knows these families (one id of each): {_families(specs)}")
    return Task(envpool, name, specs[name][0].removeprefix("envpool."))


def _import_envpool(env_id: str) -> Any:
    try:
        return importlib.import_module("envpool")
    except ImportError as err:
        raise ConfigError(f"environment {env_id!r} needs EnvPool (module 'envpool'), which cannot be imported "
                          f"({err}); install it with: {INSTALL}") from None


def _suggest(name: str, specs: dict) -> str:
    by_lower = {key.lower(): key for key in specs}
    matches = difflib.get_close_matches(name.lower(), list(by_lower), n=3, cutoff=0.6)
    return " Did you mean " + " or ".join(repr(PREFIX + by_lower[m]) for m in matches) + "?" if matches else ""


def _families(specs: dict) -> str:
    first: dict = {}
    for task, (module, *_) in specs.items():
        first.setdefault(module.removeprefix("envpool."), task)
    return ", ".join(f"{family} ({PREFIX}{task})" for family, task in sorted(first.items()))
