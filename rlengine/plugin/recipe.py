"""How another process rebuilds the plugins of a run (remote env runners load the same plugins).

A :class:`PluginRecipe` is what :func:`~rlengine.plugin.manager.build_plugins`
was asked for: the plugins switched off, and the in-process plugins. It is
picklable: a module is kept by its name and imported again where the recipe
is built, other plugin objects travel as they are (they must pickle). The
installed entry points are found again by the process that builds it, so
every machine of a cluster needs the same plugin packages installed::

    recipe = plugins.recipe                          # in the driver
    plugins = manager.rebuild_plugins(recipe)        # in the remote process: a fresh manager, same plugins
"""

from __future__ import annotations

import importlib
import types
from typing import Any, Iterable

import attrs


@attrs.frozen
class PluginRecipe:
    """The arguments of one ``build_plugins`` call, in a form that pickles."""

    disabled: tuple = ()  # plugin names switched off (the RLENGINE_DISABLE_PLUGINS ones included)
    extra: tuple = ()  # (name, module name or plugin object) of each in-process plugin
    load_entry_points: bool = True

    @classmethod
    def of(cls, disabled: Iterable[str], extra_plugins: Iterable[tuple[str, Any]],
           load_entry_points: bool) -> "PluginRecipe":
        extra = tuple((name, plugin.__name__ if isinstance(plugin, types.ModuleType) else plugin)
                      for name, plugin in extra_plugins)
        return cls(tuple(sorted(disabled)), extra, load_entry_points)

    def extra_plugins(self) -> list[tuple[str, Any]]:
        """The in-process plugins, modules imported again by name."""
        return [(name, importlib.import_module(p) if isinstance(p, str) else p) for name, p in self.extra]
