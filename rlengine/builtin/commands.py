"""The built-in commands, registered like any plugin's."""

from __future__ import annotations

from rlengine import hookimpl

#: The rlengine API (hooks and interfaces) this plugin is written against.
RLENGINE_API_VERSION = "1.2"


@hookimpl
def rlengine_register_commands(register):
    register("train", "rlengine.commands.train:Train")
    register("plugins", "rlengine.commands.plugins:ListPlugins")
