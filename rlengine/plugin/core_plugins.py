"""The list of the core's own plugins (the modules of :mod:`rlengine.builtin`), registered through the
same hooks as any third party's.

They are loaded by module name before the entry points (so they are there
in an uninstalled checkout and with ``load_entry_points=False``), and they
can be disabled by name like any plugin. Each module keeps its imports
cheap: what it registers is named by ``"module:Class"`` strings.
"""

from __future__ import annotations

import importlib
from types import ModuleType

BUILTIN_DISTRIBUTION = "rlengine"

#: (plugin name, module) in load order.
BUILTIN_PLUGINS = (
    ("builtin-pipelines", "rlengine.builtin.pipelines"),
    ("builtin-commands", "rlengine.builtin.commands"),
    ("builtin-distributions", "rlengine.builtin.distributions"),
)


def load_builtin(module: str) -> ModuleType:
    return importlib.import_module(module)
