"""Entry point of the ``rlengine-transformers`` plugin (group ``rlengine``, name ``transformers``)."""

from __future__ import annotations

from typing import Callable

from rlengine import hookimpl
from rlengine_transformers.frame_stack import FrameStack
from rlengine_transformers.image_scale import ImageScale
from rlengine_transformers.normalize import Normalize

#: The rlengine API (hooks and interfaces) this plugin is written against.
RLENGINE_API_VERSION = "1.0"

#: Registered name -> transformer class; the name is also its TOML section.
TRANSFORMERS = {
    "normalize": Normalize,
    "image_scale": ImageScale,
    "frame_stack": FrameStack,
}


@hookimpl
def rlengine_register_transformers(register: Callable[..., None]) -> None:
    for name, cls in TRANSFORMERS.items():
        register(name, cls)
