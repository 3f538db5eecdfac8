"""Entry point of the ``rlengine-writers`` plugin (group ``rlengine``, name ``writers``).

The classes are registered as ``"module:Class"`` strings, imported (with
TensorFlow) on first use only, so ``rlengine plugins`` and ``--help`` stay quick.
"""

from __future__ import annotations

from typing import Callable

from rlengine import hookimpl

#: The rlengine API (hooks and interfaces) this plugin is written against.
RLENGINE_API_VERSION = "1.0"

#: Registered name -> "module:Class"; the name is also the writer's TOML section.
WRITERS = {
    "tensorboard": "rlengine_writers.tensorboard_writer:TensorBoardWriter",
    "console": "rlengine_writers.console_writer:ConsoleWriter",
    "jsonl": "rlengine_writers.jsonl_writer:JsonlWriter",
}


@hookimpl
def rlengine_register_writers(register: Callable[..., None]) -> None:
    for name, reference in WRITERS.items():
        register(name, reference)
