"""The finite check of every environment step: any NaN or infinity in a float reward or observation, and
nothing else, whatever the size of the finite values."""

import re
import warnings

import numpy as np
import pytest
import tensorflow as tf

from rlengine.api.data import TimeStep
from rlengine.collect.env_checks import EnvironmentOutputMismatch, NonFiniteObservation, TimeStepCheck

COPIES = 3
SPEC = TimeStep(
    step_type=tf.TensorSpec((), tf.int32),
    reward=tf.TensorSpec((), tf.float32),
    discount=tf.TensorSpec((), tf.float32),
    observation={"position": tf.TensorSpec((4,), tf.float64), "small": tf.TensorSpec((2,), tf.float16),
                 "count": tf.TensorSpec((), tf.int64)},
    prev_action=tf.TensorSpec((), tf.int32),
    env_id=tf.TensorSpec((), tf.int32),
)


def _time_step(reward=0.0, position=0.0, small=0.0):
    def full(shape, dtype, value):
        return np.full((COPIES, *shape), value, dtype)

    return TimeStep(
        step_type=full((), np.int32, 1), reward=full((), np.float32, reward), discount=full((), np.float32, np.nan),
        observation={"position": full((4,), np.float64, position), "small": full((2,), np.float16, small),
                     "count": full((), np.int64, 7)},
        prev_action=full((), np.int32, 0), env_id=np.arange(COPIES, dtype=np.int32))


def _check(time_step):
    check = TimeStepCheck(SPEC, COPIES, "environment 'x'", "copies 0..2")
    check.check_finite(check.check_spec(time_step, "step"), "step")


def test_huge_finite_values_pass_and_the_discount_is_not_checked():
    _check(_time_step(reward=-3.4e38, position=1.7e308, small=65504.0))  # each dtype's largest, a NaN discount


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("field", ["reward", "position", "small"])
def test_any_non_finite_value_names_its_field_element_and_copy(field, bad):
    time_step = _time_step(reward=1e30, position=-1e300)
    leaf = time_step.reward if field == "reward" else time_step.observation[field]
    index = (2,) if field == "reward" else (2, 1)
    leaf[index] = bad
    where = "reward" if field == "reward" else f"observation['{field}'][1]"
    with warnings.catch_warnings(), pytest.raises(NonFiniteObservation) as err:
        warnings.simplefilter("error")  # the one-line error alone: no NumPy warning printed before it
        _check(time_step)
    assert re.search(rf"non-finite {re.escape(where)} = {bad} for copy 2 \(env_id 2\) in step\(\)", str(err.value))


FLAT_SPEC = TimeStep(step_type=tf.TensorSpec((), tf.int32), reward=tf.TensorSpec((), tf.float32),
                     discount=tf.TensorSpec((), tf.float32), observation=tf.TensorSpec((4,), tf.float32),
                     prev_action=tf.TensorSpec((), tf.int32), env_id=tf.TensorSpec((), tf.int32))


def _flat_time_step(**fields):
    arrays = {name: np.zeros((COPIES, *spec.shape), spec.dtype.as_numpy_dtype) for name, spec in FLAT_SPEC._asdict().items()}
    return TimeStep(**{**arrays, **fields})


def test_a_flat_spec_takes_the_fields_of_a_sound_time_step_as_its_leaves():
    time_step = _flat_time_step()
    leaves = TimeStepCheck(FLAT_SPEC, COPIES, "environment 'x'").check_spec(time_step, "step")
    assert len(leaves) == 6 and all(leaf is field for leaf, field in zip(leaves, time_step))
    as_tuple = TimeStepCheck(FLAT_SPEC, COPIES, "environment 'x'").check_spec(tuple(time_step), "step")
    assert all(leaf is field for leaf, field in zip(as_tuple, time_step))  # any nest that flattens the same
    observation = np.ones((COPIES, 4), np.float32)  # only the leaves are compared, as for a nested spec
    nested = TimeStepCheck(FLAT_SPEC, COPIES, "environment 'x'").check_spec(
        _flat_time_step(observation={"a": observation}), "step")
    assert nested[3] is observation


@pytest.mark.parametrize("fields, problem", [
    ({"observation": {"a": np.zeros((COPIES, 4), np.float32), "b": np.zeros(COPIES, np.float32)}},
     "it is TimeStep of 7 array(s), expected a TimeStep of 6"),
    ({"reward": np.zeros(COPIES, np.float64)}, "reward has dtype float64, expected float32 (cast it)"),
    ({"observation": np.zeros((COPIES, 5), np.float32)}, "observation has shape (3, 5), expected (3, 4)"),
    ({"env_id": np.arange(COPIES)}, "env_id has dtype int64, expected int32 (cast it)"),
])
def test_a_flat_spec_still_names_what_does_not_fit(fields, problem):
    check = TimeStepCheck(FLAT_SPEC, COPIES, "environment 'x'")
    with pytest.raises(EnvironmentOutputMismatch) as err:
        check.check_spec(_flat_time_step(**fields), "step")
    assert problem in str(err.value)
