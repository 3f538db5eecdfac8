"""The first-party encoders: observation nest -> ``[B, features]`` float32, before each algorithm's MLPs.

* ``flatten``: every leaf flattened and concatenated (the default of every
  first-party algorithm; no variables).
* ``mlp``: ``flatten``, then an MLP (``[mlp]`` section).
* ``nature_cnn``: the DQN-paper CNN on one image leaf (``[nature_cnn]``).
* ``impala_cnn``: the IMPALA residual CNN on one image leaf (``[impala_cnn]``).
* ``multi``: a CNN on each image leaf and an MLP on each other leaf,
  concatenated (``[multi]``), for dict observations.

Every encoder leaves an ``action_mask`` leaf out, builds its variables in
``__init__`` (target copies exist at once) and is a plain ``tf.Module``,
like the algorithms' networks (see ``networks.Dense``). Images are rank-3
leaves, height-width-channels; the convolution modules are in ``convnets``.
"""

from __future__ import annotations

import attrs
import numpy as np
import tensorflow as tf

from rlengine import ConfigError, Encoder, without_action_mask
from rlengine_algorithms.convnets import ImpalaTorso, NatureTorso, Pixels, SmallConvTorso, nature_fits
from rlengine_algorithms.networks import ACTIVATIONS, MLP, flatten_observation, positive_sizes

_v = attrs.validators
_activation = _v.in_(sorted(ACTIVATIONS))


def leaf_specs(observation_spec, encoder: str) -> list:
    """The spec's leaves (action mask left out), each of a fully known shape."""
    leaves = tf.nest.flatten(without_action_mask(observation_spec))
    for spec in leaves:
        if not spec.shape.is_fully_defined():
            raise ConfigError(f"encoder {encoder!r} needs observation leaves of known shape, got {spec.shape}")
    return leaves


def leaf_size(spec) -> int:
    return int(np.prod(spec.shape))


def image_spec(observation_spec, encoder: str):
    """The one rank-3 leaf a single-image encoder takes."""
    leaves = leaf_specs(observation_spec, encoder)
    if len(leaves) != 1 or leaves[0].shape.rank != 3:
        shapes = [list(s.shape) for s in leaves]
        raise ConfigError(f"encoder {encoder!r} takes one image observation of rank 3 (height, width, channels), "
                          f"got leaves of shapes {shapes}; use encoder = \"multi\" for several leaves or "
                          f"encoder = \"mlp\" for vectors")
    return leaves[0]


class Flatten(Encoder):
    """Every leaf cast to float32 and flattened, concatenated in nest order (no scaling, no variables)."""

    def __init__(self, observation_spec, config=None, name: str = "encoder"):
        super().__init__(observation_spec, config, name)
        self.output_size = sum(leaf_size(s) for s in leaf_specs(observation_spec, "flatten"))

    def __call__(self, observation):
        return flatten_observation(without_action_mask(observation))


@attrs.define(kw_only=True)
class MLPEncoderConfig:
    """Options of the ``mlp`` encoder (TOML section ``[mlp]``)."""

    #: widths of the encoder's dense layers after flattening, each > 0 ([]: the flattened observation)
    hidden_sizes: list = attrs.field(factory=lambda: [64, 64], validator=positive_sizes)
    activation: str = attrs.field(default="relu", validator=_activation)  # nonlinearity of every layer


class MLPEncoder(Encoder):
    config_class = MLPEncoderConfig

    def __init__(self, observation_spec, config=None, name: str = "encoder"):
        super().__init__(observation_spec, config, name)
        config = config or MLPEncoderConfig()
        size = sum(leaf_size(s) for s in leaf_specs(observation_spec, "mlp"))
        with self.name_scope:
            self.mlp = MLP(config.hidden_sizes, config.activation, "mlp", in_size=size)
        self.output_size = self.mlp.output_size

    def __call__(self, observation):
        return self.mlp(flatten_observation(without_action_mask(observation)))


@attrs.define(kw_only=True)
class NatureCNNConfig:
    """Options of the ``nature_cnn`` encoder (TOML section ``[nature_cnn]``)."""

    features: int = attrs.field(default=512, validator=_v.gt(0))  # width of the dense ReLU layer after the convolutions
    scale_uint8: bool = True  # divide uint8 pixels by 255 (other dtypes are only cast to float32)


class ImageEncoder(Encoder):
    """Base of the single-image encoders: the image leaf's pixels, then ``self.torso`` (made by ``build``)."""

    registered_as = ""

    def __init__(self, observation_spec, config=None, name: str = "encoder"):
        super().__init__(observation_spec, config, name)
        config = config or self.config_class()
        self.pixels = Pixels(image_spec(observation_spec, self.registered_as), config.scale_uint8)
        with self.name_scope:
            self.torso = self.build(self.pixels, config)
        self.output_size = config.features

    def build(self, pixels: Pixels, config) -> tf.Module:
        raise NotImplementedError

    def __call__(self, observation):
        (image,) = tf.nest.flatten(without_action_mask(observation))
        return self.torso(self.pixels(image))


class NatureCNN(ImageEncoder):
    """Conv 32 8x8/4, 64 4x4/2, 64 3x3/1 (VALID), flatten, dense ``features``, ReLU (Mnih et al. 2015)."""

    config_class = NatureCNNConfig
    registered_as = "nature_cnn"

    def build(self, pixels: Pixels, config) -> tf.Module:
        if not nature_fits(pixels.hwc):
            raise ConfigError(f"encoder 'nature_cnn' needs images of at least 36x36 pixels (its 8x8/4, 4x4/2, 3x3/1 "
                              f"kernels), got shape {pixels.shape}; use encoder = \"impala_cnn\" or \"mlp\"")
        return NatureTorso(pixels.hwc, config.features)


@attrs.define(kw_only=True)
class ImpalaCNNConfig:
    """Options of the ``impala_cnn`` encoder (TOML section ``[impala_cnn]``)."""

    #: one stack (conv 3x3, max-pool 3x3/2, two residual blocks) per entry, of that many channels, each > 0
    channels: list = attrs.field(factory=lambda: [16, 32, 32], validator=positive_sizes)
    features: int = attrs.field(default=256, validator=_v.gt(0))  # width of the dense ReLU layer at the end
    scale_uint8: bool = True  # divide uint8 pixels by 255 (other dtypes are only cast to float32)


class ImpalaCNN(ImageEncoder):
    """The IMPALA residual CNN (Espeholt et al. 2018): works on any image size (SAME padding)."""

    config_class = ImpalaCNNConfig
    registered_as = "impala_cnn"

    def build(self, pixels: Pixels, config) -> tf.Module:
        return ImpalaTorso(pixels.hwc, config.channels, config.features)


@attrs.define(kw_only=True)
class MultiConfig:
    """Options of the ``multi`` encoder (TOML section ``[multi]``)."""

    cnn: str = attrs.field(default="nature_cnn", validator=_v.in_(["nature_cnn", "impala_cnn"]))  # CNN of image leaves
    features: int = attrs.field(default=256, validator=_v.gt(0))  # width of each image CNN's last dense layer
    channels: list = attrs.field(factory=lambda: [16, 32, 32], validator=positive_sizes)  # impala_cnn stacks
    #: MLP widths on each non-image leaf (flattened), each > 0 ([]: the leaf flattened as it is)
    mlp_sizes: list = attrs.field(factory=lambda: [64], validator=positive_sizes)
    activation: str = attrs.field(default="relu", validator=_activation)  # nonlinearity of those MLPs
    scale_uint8: bool = True  # divide uint8 pixels by 255 (other dtypes are only cast to float32)


class ImagePart(tf.Module):
    """One image leaf of ``multi``: pixels to features."""

    def __init__(self, spec, config: MultiConfig, name: str):
        super().__init__(name=name)
        self.pixels = Pixels(spec, config.scale_uint8)
        hwc = self.pixels.hwc
        with self.name_scope:
            if config.cnn == "impala_cnn":
                self.torso = ImpalaTorso(hwc, config.channels, config.features)
            elif nature_fits(hwc):
                self.torso = NatureTorso(hwc, config.features)
            else:
                # Below 36x36 the Nature kernels do not fit: a small stack of 3x3 convolutions (SAME padding)
                # instead, so that a dict with a small image (a minimap, a test env) still works.
                self.torso = SmallConvTorso(hwc, config.features)
        self.output_size = config.features

    def __call__(self, image):
        return self.torso(self.pixels(image))


class VectorPart(tf.Module):
    """One non-image leaf of ``multi``: flattened, then an MLP."""

    def __init__(self, spec, config: MultiConfig, name: str):
        super().__init__(name=name)
        with self.name_scope:
            self.mlp = MLP(config.mlp_sizes, config.activation, "mlp", in_size=leaf_size(spec))
        self.output_size = self.mlp.output_size

    def __call__(self, leaf):
        batch = tf.shape(leaf)[0]
        return self.mlp(tf.reshape(tf.cast(leaf, tf.float32), [batch, -1]))


class Multi(Encoder):
    """A CNN on each rank-3 leaf, an MLP on each other leaf, their features concatenated in nest order."""

    config_class = MultiConfig

    def __init__(self, observation_spec, config=None, name: str = "encoder"):
        super().__init__(observation_spec, config, name)
        config = config or MultiConfig()
        with self.name_scope:
            self.parts = [ImagePart(s, config, f"image_{i}") if s.shape.rank == 3 else VectorPart(s, config, f"leaf_{i}")
                          for i, s in enumerate(leaf_specs(observation_spec, "multi"))]
        self.output_size = sum(part.output_size for part in self.parts)

    def __call__(self, observation):
        leaves = tf.nest.flatten(without_action_mask(observation))
        return tf.concat([part(leaf) for part, leaf in zip(self.parts, leaves)], axis=-1)
