"""Gymnasium environments for rlengine.

This module stays light on purpose: worker processes of the async
vectorization import ``rlengine_gym.worker`` and ``rlengine_gym.test_envs``
through it, and must not pull in TensorFlow. The environment class lives in
:mod:`rlengine_gym.environment`, the hook in :mod:`rlengine_gym.plugin`.
"""

__version__ = "0.1.0"


def __getattr__(name):
    if name in ("GymEnvironment", "GymConfig"):
        from rlengine_gym import environment

        return getattr(environment, name)
    raise AttributeError(f"module 'rlengine_gym' has no attribute {name!r}")
