"""Entry point of the ``rlengine-optuna`` plugin (group ``rlengine``, name ``optuna``).

The command is a ``"module:Class"`` string: ``rlengine --help`` imports
:mod:`rlengine_optuna.command` only, which imports neither Optuna nor
TensorFlow; ``rlengine tune`` imports them when it runs.
"""

from __future__ import annotations

from typing import Callable

from rlengine import hookimpl

#: The rlengine API (hooks and interfaces) this plugin is written against.
RLENGINE_API_VERSION = "1.5"

#: Command name -> "module:Class" (a subclass of rlengine.Command).
COMMANDS = {"tune": "rlengine_optuna.command:Tune"}


@hookimpl
def rlengine_register_commands(register: Callable[..., None]) -> None:
    for name, reference in COMMANDS.items():
        register(name, reference)
