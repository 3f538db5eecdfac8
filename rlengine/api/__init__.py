"""The plugin-facing API: the base classes of every plugin kind, the data types they exchange, the
specs, the run as hooks see it. It imports nothing of the engine above it.

Names load on first use, so ``from rlengine.api import Command`` does not import TensorFlow.
The facade ``rlengine`` exports every name of this one too.
"""

from __future__ import annotations

from rlengine.lazy import lazy_facade
from rlengine.quiet_tensorflow import import_tensorflow

#: Public name -> the module that defines it.
WHERE = {name: f"rlengine.api.{module}" for name, module in {
    "Algorithm": "algorithm", "untracked": "algorithm", "Environment": "environment", "FrameStack": "environment",
    "GraphEnvironment": "graph_environment",
    "ObservationTransformer": "transformer", "SummaryWriter": "writer", "Pipeline": "pipeline",
    "PipelineContext": "pipeline", "Iteration": "pipeline", "CollectorRecipe": "pipeline", "Command": "command",
    "Encoder": "network", "action_mask_of": "network", "without_action_mask": "network", "NoConfig": "noconfig",
    "Run": "run", "RunSpecs": "specs", "BoundedTensorSpec": "specs", "on_device": "placement",
    "actor_device": "placement", "Experience": "data", "LossInfo": "data", "PolicyStep": "data", "StepType": "data",
    "TimeStep": "data", "zeros_from_spec": "data", "dying_with_parent": "processes",
}.items()}
#: The modules of the API that import no TensorFlow: their names load without it.
TENSORFLOW_FREE = frozenset(f"rlengine.api.{module}" for module in ("command", "noconfig", "pipeline", "processes",
                                                                           "run"))

__getattr__, __dir__, __all__ = lazy_facade(globals(), WHERE, prepare=import_tensorflow, unprepared=TENSORFLOW_FREE)
