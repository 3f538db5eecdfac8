"""The finite check of every environment step: any NaN or infinity in a float reward or observation, and
nothing else, whatever the size of the finite values."""

import re
import warnings

import numpy as np
import pytest
import tensorflow as tf

from rlengine.api.data import TimeStep
from rlengine.collect.env_checks import NonFiniteObservation, TimeStepCheck

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
