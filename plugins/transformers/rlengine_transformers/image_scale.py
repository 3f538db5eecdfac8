"""The ``image_scale`` transformer: uint8 pixels to float32, ``x * scale + offset``.

It converts every ``uint8`` leaf of the observation nest and leaves the
others untouched. With the defaults pixels land in ``[0, 1]``; a stateless,
statistics-free transform, so ``update`` does nothing.
"""

from __future__ import annotations

from typing import Any

import attrs
import tensorflow as tf

from rlengine import ConfigError, ObservationTransformer
from rlengine_transformers.specs import map_leaves, number, plain, with_changes


@attrs.define
class ImageScaleConfig:
    """Options of the ``image_scale`` transformer (TOML section ``[image_scale]``)."""

    # Factor applied after converting to float32 (1/255 maps 0..255 to 0..1).
    scale: float = attrs.field(default=1 / 255.0, validator=[number, attrs.validators.gt(0)])
    # Added after scaling (e.g. -0.5 centres the pixels on zero).
    offset: float = attrs.field(default=0.0, validator=number)


def _is_image(spec: tf.TensorSpec) -> bool:
    return spec.dtype == tf.uint8


class ImageScale(ObservationTransformer):
    """Converts uint8 leaves to scaled float32; other leaves pass through."""

    config_class = ImageScaleConfig

    def __init__(self, observation_spec: Any, config: ImageScaleConfig):
        super().__init__(observation_spec, config)
        if not any(_is_image(s) for s in tf.nest.flatten(observation_spec)):
            raise ConfigError(
                "image_scale: the observation has no uint8 leaves to scale "
                f"(spec {observation_spec}); remove it from train.transformers"
            )

    @property
    def output_spec(self) -> Any:
        return tf.nest.map_structure(
            lambda s: with_changes(s, dtype=tf.float32) if _is_image(s) else s, plain(self.input_spec)
        )

    def transform(self, observation: Any, step_type: Any, state: Any) -> tuple[Any, Any]:
        scale, offset = float(self.config.scale), float(self.config.offset)

        def convert(spec: tf.TensorSpec, x: Any) -> Any:
            if not _is_image(spec):
                return x
            return tf.cast(x, tf.float32) * scale + offset

        return map_leaves(convert, self.input_spec, observation), state

    def update(self, observation: Any) -> None:
        """No statistics to update.

        Overridden with a real body: AutoGraph cannot convert a method that
        holds only a docstring and warns on every trace.
        """
        return None
