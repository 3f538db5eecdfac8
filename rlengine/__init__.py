"""rlengine: a plugin-based reinforcement-learning engine on TensorFlow 2.

Everything a plugin may import is listed in ``__all__``; other modules are
private to the core.
"""

from __future__ import annotations

import os
import sys


def _import_tensorflow_quietly() -> None:
    """Import TensorFlow with its C++ start-up chatter (written to fd 2 before
    any logging is set up, so no setting silences it) sent to /dev/null.
    ``RLENGINE_DEBUG=1`` keeps it. No op runs here: the runtime starts when a
    run is built, sized for its driver (see :mod:`rlengine.runtime`)."""
    from rlengine.runtime import quiet_stderr

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if "tensorflow" in sys.modules:
        return
    # TensorFlow's Keras imports matplotlib.pyplot when it is installed (for image
    # galleries rlengine never draws), about 0.5 s of every start-up; its import is
    # guarded, so hide matplotlib until TensorFlow is in. `rlengine plot` imports it itself.
    hide_matplotlib = "matplotlib" not in sys.modules
    if hide_matplotlib:
        sys.modules["matplotlib"] = None  # type: ignore[assignment]
    try:
        with quiet_stderr():
            import tensorflow as tf
            import tensorflow_probability  # noqa: F401

            # Device discovery prints once (a failed cuInit on machines without a
            # GPU); it does not start the runtime, so the pool can still be sized.
            tf.config.list_physical_devices()
    finally:
        if hide_matplotlib and sys.modules.get("matplotlib", 0) is None:
            del sys.modules["matplotlib"]


_import_tensorflow_quietly()

import pluggy  # noqa: E402

__version__ = "0.1.0"
#: Version of the plugin API (hooks and interfaces). Plugins state the range
#: they support; a change that breaks plugins bumps the major number.
API_VERSION = "1.0"

hookimpl: pluggy.HookimplMarker = pluggy.HookimplMarker("rlengine")

from rlengine import random  # noqa: E402  (the run's checkpointed random generator)
from rlengine.builtin.distributions import SquashedNormal  # noqa: E402
from rlengine.data import Experience, LossInfo, PolicyStep, StepType, TimeStep  # noqa: E402
from rlengine.errors import ConfigError, PluginError, RegistryError, RLEngineError, SpecMismatchError  # noqa: E402
from rlengine.interfaces import Algorithm, Environment, ObservationTransformer, SummaryWriter  # noqa: E402
from rlengine.interfaces.algorithm import NoConfig, untracked  # noqa: E402
from rlengine.returns import n_step_return  # noqa: E402


def __getattr__(name: str):
    # The engine pulls in the whole run machinery; load it on first use.
    if name == "Engine":
        from rlengine.engine import Engine

        return Engine
    raise AttributeError(f"module 'rlengine' has no attribute {name!r}")


__all__ = [
    "API_VERSION",
    "Algorithm",
    "ConfigError",
    "Engine",
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
    "SquashedNormal",
    "StepType",
    "SummaryWriter",
    "TimeStep",
    "__version__",
    "hookimpl",
    "n_step_return",
    "random",
    "untracked",
]
