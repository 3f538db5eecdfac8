"""The ``frame_stack`` transformer: the last ``num_frames`` observations as one.

Applied to every leaf of the observation nest. Frames are ordered oldest
first, the current observation last, and joined per leaf either along a
new axis (``mode = "stack"``, shape ``[..., num_frames]`` for the default
``axis = -1``) or along an existing one (``mode = "concat"``, e.g. images
``[H, W, C]`` become ``[H, W, C * num_frames]``). ``axis`` counts in one
observation, without the batch dimension.

The state holds, per leaf and batch row, the previous ``num_frames - 1``
frames as ``[B, num_frames - 1, *shape]`` in the leaf's own dtype (stack
before ``image_scale`` to keep uint8 history). On ``FIRST`` rows the
history is refilled with copies of the current frame, so nothing leaks from
the previous episode, and other rows are left alone.
"""

from __future__ import annotations

from typing import Any

import attrs
import tensorflow as tf

from rlengine import ConfigError, ObservationTransformer, StepType
from rlengine_transformers.specs import flatten_like, plain, with_changes

MODES = ("stack", "concat")


@attrs.define
class FrameStackConfig:
    """Options of the ``frame_stack`` transformer (TOML section ``[frame_stack]``)."""

    # Observations per output: the current one and the num_frames - 1 before it.
    num_frames: int = attrs.field(
        default=4, validator=[attrs.validators.instance_of(int), attrs.validators.ge(2)]
    )
    # "stack": frames along a new axis; "concat": frames joined along an existing axis.
    mode: str = attrs.field(default="stack", validator=attrs.validators.in_(MODES))
    # Where the frames go, counted in one observation (no batch dim); -1 is the last axis.
    axis: int = attrs.field(default=-1, validator=attrs.validators.instance_of(int))


class FrameStack(ObservationTransformer):
    """Stacks each leaf with its previous ``num_frames - 1`` values."""

    config_class = FrameStackConfig

    def __init__(self, observation_spec: Any, config: FrameStackConfig):
        super().__init__(observation_spec, config)
        # The join axis of each leaf, non-negative, in the per-copy output shape.
        self._axes = [self._resolve_axis(s) for s in tf.nest.flatten(observation_spec)]

    def _resolve_axis(self, spec: tf.TensorSpec) -> int:
        rank = spec.shape.rank or 0  # unknown rank: refused below, as there is no axis to name
        # A new axis may also go after the last one; concat needs an existing axis.
        slots = rank + 1 if self.config.mode == "stack" else rank
        if spec.shape.rank is None or not -slots <= self.config.axis < slots:
            raise ConfigError(
                f"frame_stack: axis {self.config.axis} is out of range for mode "
                f"{self.config.mode!r} and an observation of shape {spec.shape}"
            )
        return self.config.axis % slots

    @property
    def output_spec(self) -> Any:
        specs = tf.nest.flatten(self.input_spec)
        joined = [with_changes(s, shape=self._joined_shape(s, a)) for s, a in zip(specs, self._axes)]
        return tf.nest.pack_sequence_as(plain(self.input_spec), joined)

    def _joined_shape(self, spec: tf.TensorSpec, axis: int) -> list:
        shape, k = spec.shape.as_list(), self.config.num_frames
        if self.config.mode == "stack":
            return shape[:axis] + [k] + shape[axis:]
        shape[axis] = None if shape[axis] is None else shape[axis] * k
        return shape

    @property
    def state_spec(self) -> Any:
        history = self.config.num_frames - 1
        return tf.nest.map_structure(
            lambda s: with_changes(s, shape=[history, *s.shape]), plain(self.input_spec)
        )

    def transform(self, observation: Any, step_type: Any, state: Any) -> tuple[Any, Any]:
        first = tf.equal(step_type, StepType.FIRST)  # [B]
        leaves, histories = flatten_like(self.input_spec, observation, state)
        results = [self._stack_leaf(x, h, first, a) for x, h, a in zip(leaves, histories, self._axes)]
        outputs = tf.nest.pack_sequence_as(observation, [out for out, _ in results])
        next_state = tf.nest.pack_sequence_as(observation, [hist for _, hist in results])
        return outputs, next_state

    def _stack_leaf(self, x: Any, history: Any, first: tf.Tensor, axis: int) -> tuple[tf.Tensor, tf.Tensor]:
        x = tf.convert_to_tensor(x)
        # [B] -> [B, 1, ..., 1], broadcast over the history's frame and data axes.
        first = tf.reshape(first, [-1] + [1] * (history.shape.rank - 1))
        history = tf.where(first, tf.expand_dims(x, 1), history)
        frames = tf.unstack(history, num=self.config.num_frames - 1, axis=1) + [x]
        join = tf.stack if self.config.mode == "stack" else tf.concat
        return join(frames, axis=axis + 1), tf.stack(frames[1:], axis=1)

    def update(self, observation: Any) -> None:
        """No statistics to update.

        Overridden with a real body: AutoGraph cannot convert a method that
        holds only a docstring and warns on every trace.
        """
        return None
