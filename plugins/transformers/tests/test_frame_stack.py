import pytest
import tensorflow as tf
from rlengine_transformers import FrameStack, FrameStackConfig

from rlengine import ConfigError, StepType

FIRST, MID, LAST = StepType.FIRST, StepType.MID, StepType.LAST


def step_types(*kinds):
    return tf.constant(kinds, tf.int32)


def _run(t, frames, kinds):
    """Feed [T, B, ...] frames with [T, B] step types; return the stacked outputs."""
    state = t.initial_state(len(kinds[0]))
    outputs = []
    for obs, kind in zip(frames, kinds):
        out, state = t.transform(tf.constant(obs), step_types(*kind), state)
        outputs.append(out.numpy())
    return outputs, state


def test_specs():
    spec = tf.TensorSpec([84, 84, 1], tf.uint8, name="pixels")
    stack = FrameStack(spec, FrameStackConfig())
    assert stack.output_spec == tf.TensorSpec([84, 84, 1, 4], tf.uint8, name="pixels")
    assert stack.state_spec.shape == [3, 84, 84, 1] and stack.state_spec.dtype == tf.uint8
    concat = FrameStack(spec, FrameStackConfig(num_frames=3, mode="concat"))
    assert concat.output_spec.shape == [84, 84, 3]
    front = FrameStack(spec, FrameStackConfig(num_frames=2, axis=0))
    assert front.output_spec.shape == [2, 84, 84, 1]
    assert front.initial_state(5).shape == [5, 1, 84, 84, 1]


def test_history_shifts_oldest_first():
    t = FrameStack(tf.TensorSpec([1], tf.float32), FrameStackConfig(num_frames=3))
    frames = [[[float(i)]] for i in range(1, 5)]  # T=4, B=1, shape [1]
    outputs, state = _run(t, frames, [[FIRST], [MID], [MID], [LAST]])
    assert outputs[0].shape == (1, 1, 3)
    assert [o[0, 0].tolist() for o in outputs] == [[1, 1, 1], [1, 1, 2], [1, 2, 3], [2, 3, 4]]
    assert state.numpy()[0, :, 0].tolist() == [3, 4]


def test_reset_only_on_first_rows():
    t = FrameStack(tf.TensorSpec([], tf.int32), FrameStackConfig(num_frames=2, mode="stack"))
    # Row 0 starts a new episode at t=2, row 1 keeps going.
    frames = [[1, 10], [2, 20], [3, 30]]
    outputs, _ = _run(t, frames, [[FIRST, FIRST], [MID, MID], [FIRST, MID]])
    assert outputs[2].tolist() == [[3, 3], [20, 30]]


def test_concat_mode_and_nests_in_tf_function():
    spec = {"img": tf.TensorSpec([2, 1], tf.uint8), "vel": tf.TensorSpec([1], tf.float32)}
    t = FrameStack(spec, FrameStackConfig(num_frames=2, mode="concat", axis=-1))
    assert t.output_spec["img"].shape == [2, 2] and t.output_spec["vel"].shape == [2]
    transform = tf.function(t.transform)
    state = t.initial_state(1)
    seen = []
    for i, kind in enumerate([FIRST, MID]):
        obs = {"img": tf.fill([1, 2, 1], tf.constant(i + 1, tf.uint8)), "vel": tf.constant([[0.5 * i]])}
        out, state = transform(obs, step_types(kind), state)
        seen.append(out)
    assert seen[0]["img"].dtype == tf.uint8 and state["img"].shape == [1, 1, 2, 1]
    assert seen[1]["img"].numpy()[0].tolist() == [[1, 2], [1, 2]]
    assert seen[1]["vel"].numpy()[0].tolist() == [0.0, 0.5]


def test_concat_needs_an_axis():
    with pytest.raises(ConfigError):
        FrameStack(tf.TensorSpec([], tf.float32), FrameStackConfig(mode="concat"))
    with pytest.raises(ConfigError):
        FrameStack(tf.TensorSpec([3], tf.float32), FrameStackConfig(axis=2))
    for kwargs in [{"num_frames": 1}, {"mode": "interleave"}, {"axis": "last"}]:
        with pytest.raises((TypeError, ValueError)):
            FrameStackConfig(**kwargs)


def test_specs_are_plain_nests():
    # tf.Module wraps attribute dicts; handed-out specs must be plain for tf.function.
    spec = {"a": {"b": tf.TensorSpec([1], tf.float32)}}
    t = FrameStack(spec, FrameStackConfig(num_frames=2))
    for nest in (t.output_spec, t.state_spec, t.initial_state(1)):
        assert type(nest) is dict and type(nest["a"]) is dict
