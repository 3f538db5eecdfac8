"""The policy's weights as numpy arrays: what the learner ships to its runners once per version.

TensorFlow objects do not pickle, so a runner builds its own copy of the
algorithm and receives only values: every variable of the algorithm except
its optimizers' (slots and step counters, which acting never reads), in
``tf.Module`` order, the same in the driver and in every runner since both
build the algorithm from the same config and specs.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def acting_variables(algorithm: Any) -> list:
    """The algorithm's variables without its optimizers' (found as attributes with ``apply_gradients``)."""
    skipped = set()
    for value in vars(algorithm).values():
        if hasattr(value, "apply_gradients"):
            variables = value.variables() if callable(value.variables) else value.variables
            skipped |= {v.ref() for v in variables}
    return [v for v in algorithm.variables if v.ref() not in skipped]


def read(variables: list) -> list[np.ndarray]:
    return [v.numpy() for v in variables]


def assign(variables: list, values: list) -> None:
    for variable, value in zip(variables, values):
        variable.assign(value)


def layout(variables: list) -> list[tuple[str, tuple, str]]:
    """``(name, shape, dtype)`` of each variable: runner and learner must agree on it."""
    return [(v.name, tuple(v.shape), v.dtype.name) for v in variables]
