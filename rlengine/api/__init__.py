"""The plugin-facing API: the base classes of every plugin kind, the data types they exchange, the
specs, the run as hooks see it. It imports nothing of the engine above it.

Names load on first use, so ``from rlengine.api import Command`` does not import TensorFlow.
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "Algorithm": "algorithm", "untracked": "algorithm", "Environment": "environment", "FrameStack": "environment",
    "ObservationTransformer": "transformer", "SummaryWriter": "writer", "Pipeline": "pipeline",
    "PipelineContext": "pipeline", "Iteration": "pipeline", "Command": "command",
    "Encoder": "network", "action_mask_of": "network", "without_action_mask": "network", "NoConfig": "noconfig",
    "Run": "run", "RunSpecs": "specs", "BoundedTensorSpec": "specs", "on_device": "placement",
    "actor_device": "placement",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'rlengine.api' has no attribute {name!r}")
    if module not in ("command", "noconfig", "pipeline", "run"):
        from rlengine.quiet_tensorflow import import_tensorflow

        import_tensorflow()
    return getattr(importlib.import_module(f"rlengine.api.{module}"), name)
