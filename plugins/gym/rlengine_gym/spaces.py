"""Gymnasium spaces as ``tf.TensorSpec`` nests, and the numpy conversions both ways.

Mapping (specs describe one environment copy, without the batch dimension):

=================  ==============================================================
Gymnasium space    spec
=================  ==============================================================
``Box``            observation: ``TensorSpec(shape, dtype)``; action:
                   ``BoundedTensorSpec(shape, float32, low, high)``
``Discrete``       ``BoundedTensorSpec((), int32, 0, n - 1)``
``MultiDiscrete``  ``BoundedTensorSpec(nvec.shape, int32, 0, nvec - 1)``
``MultiBinary``    ``BoundedTensorSpec(shape, int32, 0, 1)``
``Dict``           ``dict`` of the above, in the space's key order (sorted)
``Tuple``          ``tuple`` of the above
=================  ==============================================================

Floating dtypes become ``float32`` except ``float16``; ``int64``, ``uint32``
and ``uint64`` become ``int32``; ``bool``, ``uint8`` and the other small
integer dtypes are kept. ``Discrete`` and ``MultiDiscrete`` values are
shifted to start at 0 (the space's ``start`` is subtracted from observations
and added back to actions), so a categorical policy over ``n`` classes fits
every discrete space.

The converters are built once per space and return plain closures: a space
that is a single leaf converts with one numpy call, without walking nests.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import tensorflow as tf
from gymnasium import spaces

from rlengine import BoundedTensorSpec, ConfigError, SpecMismatchError

__all__ = [
    "BoundedTensorSpec",
    "action_spec",
    "action_to_gym",
    "action_to_spec_dtypes",
    "leaves",
    "observation_converter",
    "observation_spec",
    "spec_dtype",
    "zeros_like_spec",
]

Converter = Callable[[Any], Any]

_SUPPORTED = "Box, Discrete, MultiDiscrete, MultiBinary, Dict, Tuple"
_WIDE_INTS = (np.dtype(np.int64), np.dtype(np.uint32), np.dtype(np.uint64))


def spec_dtype(space: spaces.Space, kind: str = "observation") -> np.dtype:
    """The numpy dtype of the spec of a leaf space (``kind``: observation / action)."""
    if isinstance(space, (spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)):
        return np.dtype(np.int32)
    if isinstance(space, spaces.Box):
        dtype = np.dtype(space.dtype)
        if kind == "action":
            return np.dtype(np.float32) if np.issubdtype(dtype, np.floating) else np.dtype(np.int32)
        if dtype == np.float64:
            return np.dtype(np.float32)
        if dtype in _WIDE_INTS:
            return np.dtype(np.int32)
        return dtype
    raise TypeError(f"not a leaf space: {space}")


def _unsupported(space: spaces.Space, kind: str, env_id: str) -> ConfigError:
    return ConfigError(
        f"environment {env_id!r} has an unsupported {kind} space {space}; supported: {_SUPPORTED}"
    )


def _to_spec(space: spaces.Space, kind: str, env_id: str) -> Any:
    if isinstance(space, spaces.Dict):
        return {key: _to_spec(sub, kind, env_id) for key, sub in space.spaces.items()}
    if isinstance(space, spaces.Tuple):
        return tuple(_to_spec(sub, kind, env_id) for sub in space.spaces)
    if isinstance(space, spaces.Box):
        dtype = tf.as_dtype(spec_dtype(space, kind))
        if kind == "observation":
            return tf.TensorSpec(space.shape, dtype)
        np_dtype = dtype.as_numpy_dtype
        if np.issubdtype(np_dtype, np.integer):
            low = np.clip(space.low, np.iinfo(np_dtype).min, np.iinfo(np_dtype).max)
            high = np.clip(space.high, np.iinfo(np_dtype).min, np.iinfo(np_dtype).max)
        else:
            low, high = space.low, space.high
        return BoundedTensorSpec(space.shape, dtype, low.astype(np_dtype), high.astype(np_dtype))
    if isinstance(space, spaces.Discrete):
        return BoundedTensorSpec((), tf.int32, 0, int(space.n) - 1)
    if isinstance(space, spaces.MultiDiscrete):
        nvec = np.asarray(space.nvec)
        return BoundedTensorSpec(nvec.shape, tf.int32, np.zeros(nvec.shape, np.int32), (nvec - 1).astype(np.int32))
    if isinstance(space, spaces.MultiBinary):
        return BoundedTensorSpec(space.shape, tf.int32, 0, 1)
    raise _unsupported(space, kind, env_id)


def observation_spec(space: spaces.Space, env_id: str = "?") -> Any:
    """Spec nest of one observation of ``space``; ``ConfigError`` when unsupported."""
    return _to_spec(space, "observation", env_id)


def action_spec(space: spaces.Space, env_id: str = "?") -> Any:
    """Spec nest of one action of ``space``; ``ConfigError`` when unsupported."""
    return _to_spec(space, "action", env_id)


def _start(space: spaces.Space) -> Any:
    """The offset of a discrete space's first value, or ``None`` when it is 0."""
    if isinstance(space, (spaces.Discrete, spaces.MultiDiscrete)):
        start = np.asarray(space.start)
        if np.any(start != 0):
            return start
    return None


# -- observations: Gymnasium -> spec dtypes --------------------------------
def observation_converter(space: spaces.Space) -> Converter:
    """A function turning a batched Gymnasium observation into fresh spec-dtype arrays.

    The result never aliases the input, so the vector env may reuse its buffers.
    """
    return _through_nests(space, _observation_leaf)


def _through_nests(space: spaces.Space, leaf: Callable[[spaces.Space], Converter]) -> Converter:
    """``leaf(space)``'s converter, mapped through the Dict and Tuple spaces around the leaves."""
    if isinstance(space, spaces.Dict):
        items = [(key, _through_nests(sub, leaf)) for key, sub in space.spaces.items()]
        return lambda value: {key: convert(value[key]) for key, convert in items}
    if isinstance(space, spaces.Tuple):
        parts = [_through_nests(sub, leaf) for sub in space.spaces]
        return lambda value: tuple(convert(v) for convert, v in zip(parts, value))
    return leaf(space)


def _observation_leaf(space: spaces.Space) -> Converter:
    dtype = spec_dtype(space, "observation")
    start = _start(space)
    if start is not None:
        return lambda obs: (np.asarray(obs) - start).astype(dtype)
    return lambda obs: np.array(obs, dtype=dtype)


# -- actions: spec nest -> Gymnasium ---------------------------------------
def action_to_spec_dtypes(space: spaces.Space, batch_size: int, env_id: str = "?") -> Converter:
    """A function copying a batched action nest into spec-dtype arrays, checking shapes.

    Accepts numpy arrays, eager tensors or anything ``np.array`` understands.
    Raises ``SpecMismatchError`` on a wrong structure or shape.
    """
    if isinstance(space, spaces.Dict):
        items = [(key, action_to_spec_dtypes(sub, batch_size, env_id)) for key, sub in space.spaces.items()]
        keys = set(space.spaces)

        def convert_dict(action):
            try:
                if set(action) != keys:
                    raise TypeError
                return {key: convert(action[key]) for key, convert in items}
            except TypeError:
                raise SpecMismatchError(
                    f"environment {env_id!r} expects a dict action with keys {sorted(keys)}, "
                    f"got {_describe(action)}"
                ) from None

        return convert_dict

    if isinstance(space, spaces.Tuple):
        parts = [action_to_spec_dtypes(sub, batch_size, env_id) for sub in space.spaces]

        def convert_tuple(action):
            if not isinstance(action, (tuple, list)) or len(action) != len(parts):
                raise SpecMismatchError(
                    f"environment {env_id!r} expects a tuple action of {len(parts)} parts, "
                    f"got {_describe(action)}"
                )
            return tuple(convert(a) for convert, a in zip(parts, action))

        return convert_tuple

    dtype = spec_dtype(space, "action")
    shape = (batch_size,) + tuple(space.shape)

    def convert_leaf(action):
        array = np.array(action, dtype=dtype)
        if array.shape != shape:
            raise SpecMismatchError(
                f"environment {env_id!r} expects actions of shape {shape}, got shape {array.shape}"
            )
        return array

    return convert_leaf


def action_to_gym(space: spaces.Space) -> Converter:
    """A function turning spec-dtype batched actions into what the vector env steps with.

    The result may share memory with its input (no copy when dtypes agree).
    """
    return _through_nests(space, _gym_action_leaf)


def _gym_action_leaf(space: spaces.Space) -> Converter:
    dtype = np.dtype(space.dtype)
    start = _start(space)
    if start is not None:
        offset = start.astype(dtype)
        return lambda action: action.astype(dtype) + offset
    return lambda action: np.asarray(action, dtype=dtype)


def zeros_like_spec(spec_nest: Any, batch_size: int) -> Any:
    """Batched zero arrays in the structure and dtypes of ``spec_nest``."""
    return tf.nest.map_structure(
        lambda s: np.zeros((batch_size,) + tuple(s.shape), s.dtype.as_numpy_dtype), spec_nest
    )


def leaves(nest: Any) -> list:
    """The arrays of a dict / tuple nest, in a fixed order."""
    if isinstance(nest, dict):
        return [leaf for key in nest for leaf in leaves(nest[key])]
    if isinstance(nest, (tuple, list)):
        return [leaf for part in nest for leaf in leaves(part)]
    return [nest]


def _describe(value: Any) -> str:
    if isinstance(value, dict):
        return f"a dict with keys {sorted(map(str, value))}"
    return f"a {type(value).__name__}"
