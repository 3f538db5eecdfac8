"""Observation transformers for rlengine: ``normalize``, ``image_scale`` and ``frame_stack``.

They are registered by :mod:`rlengine_transformers.plugin` through the
``rlengine_register_transformers`` hook and chosen, in order, with
``train.transformers``.

The names below load on first use: the entry point imports this package,
and listing plugins must not import TensorFlow.
"""

from __future__ import annotations

from rlengine.lazy import lazy_facade

__version__ = "0.1.0"

#: Public name -> the module that defines it.
_WHERE = {
    "FrameStack": "rlengine_transformers.frame_stack",
    "FrameStackConfig": "rlengine_transformers.frame_stack",
    "ImageScale": "rlengine_transformers.image_scale",
    "ImageScaleConfig": "rlengine_transformers.image_scale",
    "Normalize": "rlengine_transformers.normalize",
    "NormalizeConfig": "rlengine_transformers.normalize",
}

__getattr__, __dir__, __all__ = lazy_facade(globals(), _WHERE, eager=["__version__"])
