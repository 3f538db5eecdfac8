"""The specs of a run, derived once by the dry run in :mod:`rlengine.run.specs`, and the check
every plugin output is held against."""

from __future__ import annotations

from typing import Any

import attrs
import tensorflow as tf

# TensorFlow's bounded spec (tf.TensorSpec with minimum and maximum), which TensorFlow does not export
# under a public name; rlengine re-exports it so that plugins need no private TensorFlow import.
from tensorflow.python.framework.tensor_spec import BoundedTensorSpec  # noqa: F401

from rlengine.api.data import Experience, LossInfo, Nest, TimeStep
from rlengine.errors import SpecMismatchError


@attrs.frozen
class RunSpecs:
    """Every spec of a run (per environment copy, no batch dimension)."""

    raw_time_step: TimeStep  # as the environment returns it
    time_step: TimeStep  # after the observation transformers
    action: Nest
    state: Nest  # the algorithm's policy state
    transformer_state: tuple
    rollout_info: Nest  # DistributionSpec leaves where distributions are
    experience: Experience  # what is stored: distributions as parameter dicts
    train_info: Nest  # of train_step, DistributionSpec leaves allowed
    loss: LossInfo  # of train_complete (scalars)



def check_nest(who: str, what: str, expected_spec: Nest, actual: Nest) -> None:
    """Raise SpecMismatchError unless ``actual`` (batched) matches ``expected_spec``.

    ``who`` names the culprit, e.g. ``"algorithm 'ppo'"``.
    """
    try:
        tf.nest.assert_same_structure(expected_spec, actual)
    except (ValueError, TypeError):
        raise SpecMismatchError(
            f"{who}: {what} has the wrong structure; expected "
            f"{_describe(expected_spec)}, got {_describe(actual)}"
        ) from None
    for spec, value in zip(tf.nest.flatten(expected_spec), tf.nest.flatten(actual)):
        value = tf.convert_to_tensor(value)
        if value.dtype != spec.dtype or value.shape[1:] != spec.shape:
            raise SpecMismatchError(
                f"{who}: {what} does not match its spec; expected "
                f"{_describe(expected_spec)}, got {_describe(actual)} (batch dimension dropped)"
            )


def _describe(nest: Any) -> str:
    def leaf(x: Any) -> str:
        if isinstance(x, tf.TensorSpec):
            return f"{x.dtype.name}{list(x.shape)}"
        t = tf.convert_to_tensor(x)
        return f"{t.dtype.name}{list(t.shape[1:])}"

    return str(tf.nest.map_structure(leaf, nest))
