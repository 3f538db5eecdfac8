"""Observation transformers for rlengine: ``normalize``, ``image_scale`` and ``frame_stack``.

They are registered by :mod:`rlengine_transformers.plugin` through the
``rlengine_register_transformers`` hook and chosen, in order, with
``train.transformers``.
"""

from rlengine_transformers.frame_stack import FrameStack, FrameStackConfig
from rlengine_transformers.image_scale import ImageScale, ImageScaleConfig
from rlengine_transformers.normalize import Normalize, NormalizeConfig

__version__ = "0.1.0"

__all__ = [
    "FrameStack",
    "FrameStackConfig",
    "ImageScale",
    "ImageScaleConfig",
    "Normalize",
    "NormalizeConfig",
    "__version__",
]
