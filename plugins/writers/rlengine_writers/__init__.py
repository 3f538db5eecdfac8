"""Summary writers for rlengine: ``tensorboard``, ``console`` and ``jsonl``.

They are registered by :mod:`rlengine_writers.plugin` through the
``rlengine_register_writers`` hook and chosen with ``train.writers``.
"""

from rlengine_writers.console_writer import ConsoleConfig, ConsoleWriter
from rlengine_writers.jsonl_writer import JsonlConfig, JsonlWriter
from rlengine_writers.tensorboard_writer import TensorBoardConfig, TensorBoardWriter

__version__ = "0.1.0"

__all__ = [
    "ConsoleConfig",
    "ConsoleWriter",
    "JsonlConfig",
    "JsonlWriter",
    "TensorBoardConfig",
    "TensorBoardWriter",
    "__version__",
]
