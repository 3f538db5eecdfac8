"""What a ``tf.numpy_function`` returns, converted without reading NumPy's version each time.

TensorFlow hands every array a ``numpy_function`` returns to
``numpy_compat.np_asarray``, which parses ``np.__version__`` (two regular
expressions) on every call to choose between its NumPy 1 and NumPy 2
branches. That is a fixed cost on every environment step, which is most of
what a step costs once the environment itself is an array step
(``docs/performance.md``, native vector environments). :func:`hoist_version_check`
puts in its place the same conversion with the branch chosen once: the
NumPy 2 branch, word for word.

It is applied only where it is the same function: NumPy 2 or later, and
TensorFlow's ``np_asarray`` still the function whose names it reads
(``_EXPECTED_NAMES``); any other TensorFlow keeps its own. Nothing else in
TensorFlow is touched, and the replacement gives what the original gives for
every input (tested side by side).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from tensorflow.python.util import numpy_compat

__all__ = ["hoist_version_check", "np_asarray_numpy2"]

#: The global names TensorFlow 2.21's ``np_asarray`` reads: a function reading others is not replaced.
_EXPECTED_NAMES = ("np", "lib", "NumpyVersion", "__version__", "issubdtype", "number", "asarray", "astype")
_original = numpy_compat.np_asarray


def np_asarray_numpy2(values: Any, dtype: Any = None, order: Any = None, copy: Any = None) -> np.ndarray:
    """TensorFlow's ``np_asarray`` on NumPy 2: a numeric dtype is cast after the conversion (overflow wraps)."""
    if dtype is not None and np.issubdtype(dtype, np.number):
        return np.asarray(values, order=order, copy=copy).astype(dtype, copy=copy)
    return np.asarray(values, dtype=dtype, order=order, copy=copy)


def hoist_version_check() -> bool:
    """Replace TensorFlow's ``np_asarray`` by :func:`np_asarray_numpy2` where they are the same; whether it is."""
    if numpy_compat.np_asarray is np_asarray_numpy2:
        return True
    same = (np.lib.NumpyVersion(np.__version__) >= "2.0.0.dev0"
            and numpy_compat.np_asarray is _original
            and getattr(_original, "__code__", None) is not None
            and _original.__code__.co_names == _EXPECTED_NAMES)
    if same:
        numpy_compat.np_asarray = np_asarray_numpy2
    return same
