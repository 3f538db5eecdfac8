"""Entry point of the ``rlengine-transformers`` plugin (group ``rlengine``, name ``transformers``).

The classes are registered as ``"module:Class"`` strings, imported (with
TensorFlow) on first use only, so ``rlengine plugins`` and ``--help`` stay quick.
"""

from __future__ import annotations

from typing import Callable

from rlengine import hookimpl

#: The rlengine API (hooks and interfaces) this plugin is written against.
RLENGINE_API_VERSION = "1.3"

#: Registered name -> "module:Class"; the name is also its TOML section.
TRANSFORMERS = {
    "normalize": "rlengine_transformers.normalize:Normalize",
    "image_scale": "rlengine_transformers.image_scale:ImageScale",
    "frame_stack": "rlengine_transformers.frame_stack:FrameStack",
}


@hookimpl
def rlengine_register_transformers(register: Callable[..., None]) -> None:
    for name, reference in TRANSFORMERS.items():
        register(name, reference)
