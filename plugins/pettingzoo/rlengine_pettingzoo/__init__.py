"""PettingZoo's multi-agent environments for rlengine: ``mpe2/<env>`` and ``pettingzoo/<family>.<env>``.

This module stays light: the hook lives in :mod:`rlengine_pettingzoo.plugin`, and the environment class
(which imports PettingZoo and TensorFlow) loads on first use.
"""

from rlengine.lazy import lazy_facade

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_facade(
    globals(), {"PettingZooEnvironment": "rlengine_pettingzoo.environment",
                "PettingZooConfig": "rlengine_pettingzoo.config"},
    eager=["__version__"])
