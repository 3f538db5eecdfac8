"""Names that load on first use, and module paths that moved.

:func:`lazy_facade` makes a package's facade from one table, *public name -> the module that
defines it*: the package imports nothing heavy, and the first use of a name imports its module
(after an optional ``prepare``, e.g. the quiet TensorFlow import) and keeps the value in the
package, so later look-ups are plain attribute reads. The core's facades (``rlengine``,
``rlengine.api``) and the first-party plugins' packages are built with it.

:data:`MOVED_MODULES` lists the public modules that moved; once :func:`install_moved_modules` has
run (``import rlengine`` does it), importing an old path gives the module at its new one, with a
``DeprecationWarning`` naming both.

It imports nothing of rlengine, so every layer may use it.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from collections.abc import Callable, Collection, Iterable, Mapping
from types import ModuleType
from typing import Any, NamedTuple

#: What plugins may use; the moved-module table and its finder are the core's.
__all__ = ["LazyFacade", "lazy_facade"]


class LazyFacade(NamedTuple):
    """What a facade module assigns: ``__getattr__, __dir__, __all__ = lazy_facade(...)``."""

    module_getattr: Callable[[str], Any]
    module_dir: Callable[[], list[str]]
    public_names: list[str]


def lazy_facade(namespace: dict[str, Any], names: Mapping[str, str], *, modules: Mapping[str, str] | None = None,
                eager: Iterable[str] = (), prepare: Callable[[], object] | None = None,
                unprepared: Collection[str] = ()) -> LazyFacade:
    """The module-level ``__getattr__``, ``__dir__`` and ``__all__`` of the module whose ``globals()``
    is ``namespace``.

    ``names`` maps each public name to the module that defines it; ``modules`` maps public names
    that are whole modules to them. ``eager`` are the names the module defines itself (listed in
    ``__all__`` too). ``prepare`` runs before importing any module not in ``unprepared``.
    """
    modules = dict(modules or {})
    owner = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        module = names.get(name) or modules.get(name)
        if module is None:
            raise AttributeError(f"module {owner!r} has no attribute {name!r}")
        if prepare is not None and module not in unprepared:
            prepare()
        loaded = importlib.import_module(module)
        value = loaded if name in modules else getattr(loaded, name)
        namespace[name] = value  # later look-ups are plain attribute reads
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *names, *modules})

    return LazyFacade(__getattr__, __dir__, sorted({*eager, *names, *modules}))


#: Old dotted path -> new dotted path of every public module that moved.
MOVED_MODULES = {
    "rlengine.learn.replay_rings": "rlengine.learn.replay.rings",
    "rlengine.learn.replay_frames": "rlengine.learn.replay.frames",
    "rlengine.learn.replay_checkpoint": "rlengine.learn.replay.checkpoint",
    "rlengine.learn.sumtree": "rlengine.learn.replay.sumtree",
    "rlengine.collect.distributions": "rlengine.collect.converters",
}


class _MovedModuleFinder(importlib.abc.MetaPathFinder):
    """Finds the old paths of :data:`MOVED_MODULES`, and nothing else."""

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> Any:
        new = MOVED_MODULES.get(fullname)
        return None if new is None else importlib.util.spec_from_loader(fullname, _MovedModuleLoader(new))


class _MovedModuleLoader(importlib.abc.Loader):
    """Loads an old path as the module at its new one: the same object, under both names."""

    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: Any) -> ModuleType:
        # stacklevel 2: the importer's line (warnings skips the import system's own frames).
        warnings.warn(f"{spec.name} moved to {self.new}: import {self.new} instead", DeprecationWarning,
                      stacklevel=2)
        module = importlib.import_module(self.new)
        self.own_spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The import system has just set the old path's spec on the module: give it back its own,
        # so that the module still names where it lives.
        module.__spec__ = self.own_spec


def install_moved_modules() -> None:
    """Make the old paths of :data:`MOVED_MODULES` importable (once per process)."""
    if not any(isinstance(finder, _MovedModuleFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _MovedModuleFinder())
