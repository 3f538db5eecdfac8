"""Gymnasium environments for rlengine.

This module stays light on purpose: worker processes of the async
vectorization import ``rlengine_gym.worker`` and ``rlengine_gym.test_envs``
through it, and must not pull in TensorFlow. The environment class lives in
:mod:`rlengine_gym.environment` and loads on first use (:mod:`rlengine.lazy`
imports no TensorFlow), the hook in :mod:`rlengine_gym.plugin`.
"""

from rlengine.lazy import lazy_facade

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_facade(
    globals(), {"GymEnvironment": "rlengine_gym.environment", "GymConfig": "rlengine_gym.environment"},
    eager=["__version__"])
