"""rlengine: a plugin-based reinforcement-learning engine on TensorFlow 2.

Everything a plugin may import is listed in ``__all__``; other modules are
private to the core, except the kits pipeline authors build on
(:mod:`rlengine.collect`, :mod:`rlengine.learn`) and the test kit
(:mod:`rlengine.testing`). Names load on first use, so ``import rlengine``
(and ``rlengine --version``, ``--help``, ``plugins``) does not import
TensorFlow; the first name that needs it imports it, quietly.
"""

from __future__ import annotations

import importlib
from typing import Any

from rlengine.plugin.markers import API_VERSION as API_VERSION
from rlengine.plugin.markers import CORE_VERSION as __version__  # noqa: F401  (in __all__)
from rlengine.plugin.markers import hookimpl as hookimpl

#: Public name -> the module that defines it.
_WHERE = {
    "Algorithm": "rlengine.api.algorithm",
    "untracked": "rlengine.api.algorithm",
    "Environment": "rlengine.api.environment",
    "FrameStack": "rlengine.api.environment",
    "ObservationTransformer": "rlengine.api.transformer",
    "SummaryWriter": "rlengine.api.writer",
    "Pipeline": "rlengine.api.pipeline",
    "PipelineContext": "rlengine.api.pipeline",
    "Iteration": "rlengine.api.pipeline",
    "Command": "rlengine.api.command",
    "Encoder": "rlengine.api.network",
    "action_mask_of": "rlengine.api.network",
    "without_action_mask": "rlengine.api.network",
    "NoConfig": "rlengine.api.noconfig",
    "Run": "rlengine.api.run",
    "RunSpecs": "rlengine.api.specs",
    "BoundedTensorSpec": "rlengine.api.specs",
    "RunConfig": "rlengine.config.schema",
    "TrainConfig": "rlengine.config.schema",
    "Experience": "rlengine.api.data",
    "LossInfo": "rlengine.api.data",
    "PolicyStep": "rlengine.api.data",
    "StepType": "rlengine.api.data",
    "TimeStep": "rlengine.api.data",
    "ConfigError": "rlengine.errors",
    "PluginError": "rlengine.errors",
    "RegistryError": "rlengine.errors",
    "RLEngineError": "rlengine.errors",
    "SpecMismatchError": "rlengine.errors",
    "SquashedNormal": "rlengine.builtin.converters",
    "n_step_return": "rlengine.learn.returns",
    "Engine": "rlengine.run.engine",
    "TrainResult": "rlengine.run.trainer",
    "load": "rlengine.policy.load",
    "Policy": "rlengine.policy.saved",
    "RemoteCollector": "rlengine.run.remote",
    "CollectorRecipe": "rlengine.api.pipeline",
    "ActingWeights": "rlengine.run.remote",
    "PolicyState": "rlengine.policy.saved",
}
_MODULES = {"random": "rlengine.api.seeding"}  # the run's checkpointed random generator
_NO_TENSORFLOW = {"rlengine.api.command", "rlengine.api.noconfig", "rlengine.api.pipeline", "rlengine.api.run",
                  "rlengine.config.schema", "rlengine.errors"}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name) or _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module 'rlengine' has no attribute {name!r}")
    if module not in _NO_TENSORFLOW:
        from rlengine.quiet_tensorflow import import_tensorflow

        import_tensorflow()
    loaded = importlib.import_module(module)
    value = loaded if name in _MODULES else getattr(loaded, name)
    globals()[name] = value  # later look-ups are plain attribute reads
    return value


__all__ = sorted(["API_VERSION", "__version__", "hookimpl", "random", *_WHERE])
