"""From the id a run names to the PettingZoo module that makes the game, imported here only.

``mpe2/simple_spread_v3`` is the module ``mpe2.simple_spread_v3``; ``pettingzoo/classic.connect_four_v3``
is ``pettingzoo.classic.connect_four_v3`` (the package, then the module). A missing package and an
unknown module are each one ``ConfigError``: the first names the pip command, the second the closest
modules of that family.
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
from types import ModuleType

from rlengine import ConfigError

__all__ = ["INSTALL", "resolve_module"]

INSTALL = {"pettingzoo": 'pip install "pettingzoo>=1.25"', "mpe2": 'pip install "mpe2>=1.1"'}
_EXAMPLES = "e.g. --env mpe2/simple_spread_v3 or --env pettingzoo/classic.connect_four_v3"


def resolve_module(env_id: str) -> ModuleType:
    """The module ``env_id`` names (it has ``parallel_env`` and/or ``env``)."""
    package, _, name = env_id.partition("/")
    if package not in INSTALL or not name or name.startswith("."):
        raise ConfigError(f"environment {env_id!r} names no PettingZoo game: use mpe2/<env> or "
                          f"pettingzoo/<family>.<env>, {_EXAMPLES}")
    _import(package, env_id)
    full = f"{package}.{name}"
    try:
        module = importlib.import_module(full)
    except ModuleNotFoundError as err:
        if err.name is not None and not full.startswith(err.name):
            raise ConfigError(f"environment {env_id!r} needs the module {err.name!r}, which is not installed; "
                              f"install the game's extra, e.g. pip install \"pettingzoo[{name.split('.')[0]}]\"") \
                from None
        raise ConfigError(f"unknown PettingZoo game {name!r} in {env_id!r}.{_suggest(package, name)}") from None
    if not hasattr(module, "parallel_env") and not hasattr(module, "env"):
        raise ConfigError(f"{full!r} makes no game (it has neither parallel_env nor env): {_EXAMPLES}")
    return module


def _import(package: str, env_id: str) -> ModuleType:
    try:
        return importlib.import_module(package)
    except ImportError as err:
        raise ConfigError(f"environment {env_id!r} needs the package {package!r}, which cannot be imported "
                          f"({err}); install it with: {INSTALL[package]}") from None


def _suggest(package: str, name: str) -> str:
    """The closest modules to ``name`` in its family (``classic.``) or the package itself."""
    family, dot, _ = name.rpartition(".")
    parent = f"{package}.{family}" if dot else package
    try:
        known = [m.name for m in pkgutil.iter_modules(importlib.import_module(parent).__path__)]
    except (ImportError, AttributeError):
        return f" {package!r} has no family {family!r}; use pettingzoo/<family>.<env>, {_EXAMPLES}"
    prefix = f"{package}/{family}." if dot else f"{package}/"
    leaf = name.rpartition(".")[2]
    matches = difflib.get_close_matches(leaf, known, n=3, cutoff=0.6)
    return " Did you mean " + " or ".join(repr(prefix + m) for m in matches) + "?" if matches else ""
