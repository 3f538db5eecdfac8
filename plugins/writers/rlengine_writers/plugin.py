"""Entry point of the ``rlengine-writers`` plugin (group ``rlengine``, name ``writers``).

The classes are registered as ``"module:Class"`` strings, imported (with
TensorFlow) on first use only, so ``rlengine plugins`` and ``--help`` stay quick.
The ``mlflow`` and ``wandb`` modules import their tracker only when a writer
is made, so they load (and list) without it.
"""

from __future__ import annotations

from typing import Callable

from rlengine import hookimpl

#: The rlengine API (hooks and interfaces) this plugin is written against.
RLENGINE_API_VERSION = "1.5"

#: Registered name -> "module:Class"; the name is also the writer's TOML section.
WRITERS = {
    "tensorboard": "rlengine_writers.tensorboard_writer:TensorBoardWriter",
    "console": "rlengine_writers.console_writer:ConsoleWriter",
    "jsonl": "rlengine_writers.jsonl_writer:JsonlWriter",
    "mlflow": "rlengine_writers.mlflow_writer:MlflowWriter",
    "wandb": "rlengine_writers.wandb_writer:WandbWriter",
}

#: Callbacks (lifecycle hooks made once per run), likewise; the name is also the TOML section.
CALLBACKS = {
    "mlflow-policy": "rlengine_writers.mlflow_policy:MlflowPolicy",
}


@hookimpl
def rlengine_register_writers(register: Callable[..., None]) -> None:
    for name, reference in WRITERS.items():
        register(name, reference)


@hookimpl
def rlengine_register_callbacks(register: Callable[..., None]) -> None:
    for name, reference in CALLBACKS.items():
        register(name, reference)
