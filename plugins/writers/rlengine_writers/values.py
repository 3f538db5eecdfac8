"""Turning metric values (Python numbers, NumPy scalars, eager tensors) into plain numbers.

Writers run every summary interval, so the conversion is a few attribute
checks and no TensorFlow ops.
"""

from __future__ import annotations

import math
from typing import Any, Optional, Union

import numpy as np

Number = Union[int, float]

#: Keys present in every row; they index the row rather than measure anything.
INDEX_KEYS = ("iteration", "env_steps", "wall_time")


def to_number(value: Any) -> Optional[Number]:
    """The value as a plain ``int`` or ``float``, or ``None`` when it is not a numeric scalar.

    Booleans become ints; single-element arrays and tensors are unwrapped.
    """
    if hasattr(value, "numpy"):  # eager tf.Tensor / tf.Variable
        value = value.numpy()
    if isinstance(value, np.ndarray):
        if value.size != 1:
            return None
        value = value.reshape(())[()]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return value
    return None


def finite_or_none(value: Number) -> Optional[Number]:
    """``None`` for NaN and infinities (JSON has no spelling for them)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
