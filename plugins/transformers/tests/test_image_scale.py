import numpy as np
import pytest
import tensorflow as tf
from rlengine_transformers import ImageScale, ImageScaleConfig

from rlengine import ConfigError

MID = tf.constant([1, 1], tf.int32)


def test_uint8_becomes_float32_in_unit_range():
    spec = tf.TensorSpec([2, 2, 1], tf.uint8, name="pixels")
    t = ImageScale(spec, ImageScaleConfig())
    assert t.output_spec == tf.TensorSpec([2, 2, 1], tf.float32, name="pixels")
    pixels = tf.constant(np.array([0, 51, 255, 128] * 2, np.uint8).reshape([2, 2, 2, 1]))
    out, state = t.transform(pixels, MID, ())
    assert out.dtype == tf.float32 and state == ()
    np.testing.assert_allclose(out.numpy(), pixels.numpy() / 255.0, rtol=1e-6)
    assert t.variables == ()


def test_scale_offset_nests_and_tf_function():
    spec = (tf.TensorSpec([3], tf.uint8), tf.TensorSpec([1], tf.float32))
    t = ImageScale(spec, ImageScaleConfig(scale=0.5, offset=-1))
    assert t.output_spec[0].dtype == tf.float32 and t.output_spec[1] is spec[1]
    obs = (tf.constant([[0, 2, 4]], tf.uint8), tf.constant([[7.0]]))
    out, _ = tf.function(t.transform)(obs, MID[:1], ())
    np.testing.assert_allclose(out[0].numpy(), [[-1.0, 0.0, 1.0]])
    np.testing.assert_allclose(out[1].numpy(), [[7.0]])


def test_errors():
    with pytest.raises(ConfigError):
        ImageScale(tf.TensorSpec([3], tf.float32), ImageScaleConfig())
    for kwargs in [{"scale": 0.0}, {"scale": "1"}, {"offset": None}]:
        with pytest.raises((TypeError, ValueError)):
            ImageScaleConfig(**kwargs)
