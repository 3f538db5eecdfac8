"""EnvPool's environments for rlengine: ``envpool/<task id>``, stepped in EnvPool's C++ threads.

This module stays light: the hook lives in :mod:`rlengine_envpool.plugin`, and the environment class
(which imports EnvPool and TensorFlow) loads on first use.
"""

from rlengine.lazy import lazy_facade

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_facade(
    globals(), {"EnvPoolEnvironment": "rlengine_envpool.environment", "EnvPoolConfig": "rlengine_envpool.config"},
    eager=["__version__"])
