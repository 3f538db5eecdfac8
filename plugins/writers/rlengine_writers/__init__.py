"""Summary writers for rlengine: ``tensorboard``, ``console``, ``jsonl``, and the trackers ``mlflow`` and ``wandb``.

They are registered by :mod:`rlengine_writers.plugin` through the
``rlengine_register_writers`` hook and chosen with ``train.writers``; the
``mlflow-policy`` callback (``rlengine_register_callbacks``) logs the
exported policy of runs the ``mlflow`` writer tracks.

The names below load on first use: the entry point imports this package,
and listing plugins must not import TensorFlow.
"""

from __future__ import annotations

from rlengine.lazy import lazy_facade

__version__ = "0.1.0"

#: Public name -> the module that defines it.
_WHERE = {
    "ConsoleConfig": "rlengine_writers.console_writer",
    "ConsoleWriter": "rlengine_writers.console_writer",
    "JsonlConfig": "rlengine_writers.jsonl_writer",
    "JsonlWriter": "rlengine_writers.jsonl_writer",
    "MlflowConfig": "rlengine_writers.mlflow_writer",
    "MlflowWriter": "rlengine_writers.mlflow_writer",
    "MlflowPolicy": "rlengine_writers.mlflow_policy",
    "MlflowPolicyConfig": "rlengine_writers.mlflow_policy",
    "TensorBoardConfig": "rlengine_writers.tensorboard_writer",
    "TensorBoardWriter": "rlengine_writers.tensorboard_writer",
    "WandbConfig": "rlengine_writers.wandb_writer",
    "WandbWriter": "rlengine_writers.wandb_writer",
}

__getattr__, __dir__, __all__ = lazy_facade(globals(), _WHERE, eager=["__version__"])
