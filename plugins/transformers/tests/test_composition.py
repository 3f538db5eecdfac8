import numpy as np
import tensorflow as tf
from rlengine_transformers import (
    FrameStack,
    FrameStackConfig,
    ImageScale,
    ImageScaleConfig,
    Normalize,
    NormalizeConfig,
)

from rlengine import StepType


def _chain(spec, *pairs):
    """Build transformers in order, each on the previous one's output spec."""
    chain = []
    for cls, config in pairs:
        chain.append(cls(spec, config))
        spec = chain[-1].output_spec
    return chain


def test_image_scale_then_normalize():
    scale, norm = _chain(
        tf.TensorSpec([4], tf.uint8), (ImageScale, ImageScaleConfig()), (Normalize, NormalizeConfig())
    )
    assert norm.output_spec.dtype == tf.float32
    pixels = tf.constant(np.arange(8, dtype=np.uint8).reshape(2, 4) * 30)
    first = tf.fill([2], StepType.FIRST)
    scaled, _ = scale.transform(pixels, first, ())
    norm.update(scaled)
    out, _ = norm.transform(scaled, first, ())
    np.testing.assert_allclose(out.numpy(), [[-1.0] * 4, [1.0] * 4], atol=1e-4)


def test_frame_stack_then_image_scale_keeps_uint8_history():
    stack, scale = _chain(
        tf.TensorSpec([3, 3, 1], tf.uint8),
        (FrameStack, FrameStackConfig(num_frames=2)),
        (ImageScale, ImageScaleConfig()),
    )
    assert scale.output_spec == tf.TensorSpec([3, 3, 1, 2], tf.float32)
    assert stack.state_spec.dtype == tf.uint8

    @tf.function
    def step(obs, step_type, state):
        obs, state = stack.transform(obs, step_type, state)
        return scale.transform(obs, step_type, ())[0], state

    state = stack.initial_state(1)
    out, state = step(tf.fill([1, 3, 3, 1], tf.constant(255, tf.uint8)), tf.fill([1], StepType.FIRST), state)
    assert out.shape == [1, 3, 3, 1, 2]
    np.testing.assert_allclose(out.numpy(), 1.0)
