"""Learning from data for rlengine: Minari datasets, the offline pipeline, behaviour cloning, TD3+BC, IQL.

This module stays light: the hooks live in :mod:`rlengine_offline.plugin`, and the classes (which import
Minari and TensorFlow) load on first use.
"""

from rlengine.lazy import lazy_facade

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_facade(
    globals(), {"BC": "rlengine_offline.bc", "TD3BC": "rlengine_offline.td3_bc", "IQL": "rlengine_offline.iql",
                "OfflinePipeline": "rlengine_offline.pipeline", "open_dataset": "rlengine_offline.datasets"},
    eager=["__version__"])
