"""Entry point of the ``rlengine-writers`` plugin (group ``rlengine``, name ``writers``)."""

from __future__ import annotations

from typing import Callable

from rlengine import hookimpl
from rlengine_writers.console_writer import ConsoleWriter
from rlengine_writers.jsonl_writer import JsonlWriter
from rlengine_writers.tensorboard_writer import TensorBoardWriter

#: The rlengine API (hooks and interfaces) this plugin is written against.
RLENGINE_API_VERSION = "1.0"

#: Registered name -> writer class; the name is also the writer's TOML section.
WRITERS = {
    "tensorboard": TensorBoardWriter,
    "console": ConsoleWriter,
    "jsonl": JsonlWriter,
}


@hookimpl
def rlengine_register_writers(register: Callable[..., None]) -> None:
    for name, cls in WRITERS.items():
        register(name, cls)
