"""Entry point of the ``rlengine-tools`` plugin (group ``rlengine``, name ``tools``).

The commands are ``"module:Class"`` strings: ``rlengine --help`` imports
:mod:`rlengine_tools.commands` only, and TensorFlow, matplotlib and imageio
are imported by the command that runs.
"""

from __future__ import annotations

from typing import Callable

from rlengine import hookimpl

#: The rlengine API (hooks and interfaces) this plugin is written against.
RLENGINE_API_VERSION = "1.1"

#: Command name -> "module:Class" (a subclass of rlengine.Command).
COMMANDS = {
    "eval": "rlengine_tools.commands:Eval",
    "play": "rlengine_tools.commands:Play",
    "export": "rlengine_tools.commands:Export",
    "plot": "rlengine_tools.commands:Plot",
    "runs": "rlengine_tools.runs:Runs",
}


@hookimpl
def rlengine_register_commands(register: Callable[..., None]) -> None:
    for name, reference in COMMANDS.items():
        register(name, reference)
