"""rlengine: a plugin-based reinforcement-learning engine on TensorFlow 2.

Everything a plugin may import is listed in ``__all__``; other modules are
private to the core.
"""

from __future__ import annotations

import os

# TensorFlow prints pages of C++ start-up logs; keep them out of users' way.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pluggy  # noqa: E402

__version__ = "0.1.0"
#: Version of the plugin API (hooks and interfaces). Plugins state the range
#: they support; a change that breaks plugins bumps the major number.
API_VERSION = "1.0"

hookimpl = pluggy.HookimplMarker("rlengine")

from rlengine.data import Experience, LossInfo, PolicyStep, StepType, TimeStep  # noqa: E402
from rlengine.errors import ConfigError, PluginError, RegistryError, RLEngineError, SpecMismatchError  # noqa: E402
from rlengine.interfaces import Algorithm, Environment, ObservationTransformer, SummaryWriter  # noqa: E402
from rlengine.interfaces.algorithm import NoConfig  # noqa: E402

__all__ = [
    "API_VERSION",
    "Algorithm",
    "ConfigError",
    "Environment",
    "Experience",
    "LossInfo",
    "NoConfig",
    "ObservationTransformer",
    "PluginError",
    "PolicyStep",
    "RLEngineError",
    "RegistryError",
    "SpecMismatchError",
    "StepType",
    "SummaryWriter",
    "TimeStep",
    "__version__",
    "hookimpl",
]
