"""EnvPool's spaces (``Box`` and ``Discrete``, those of the families this plugin maps) as the engine's specs.

The dtypes are those the engine's Gymnasium path gives the same spaces, so one policy fits both: floating
observations and actions become ``float32``, a ``Discrete`` space a ``BoundedTensorSpec((), int32, 0, n - 1)``,
and ``uint8`` frames stay ``uint8``. Specs describe one copy (no batch dimension).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf
from gymnasium import spaces

from rlengine import BoundedTensorSpec, ConfigError

__all__ = ["action_spec", "observation_dtype", "observation_spec"]


def _unsupported(space: Any, kind: str, env_id: str) -> ConfigError:
    return ConfigError(f"environment {env_id!r} has a {kind} space {space}, which rlengine-envpool does not map; "
                       f"it maps Box and Discrete spaces (classic control, Box2D, MuJoCo, Atari)")


def observation_dtype(space: spaces.Box) -> np.dtype:
    """The spec dtype of a ``Box`` observation: ``float32`` for any floating dtype, else its own."""
    return np.dtype(np.float32) if np.issubdtype(space.dtype, np.floating) else np.dtype(space.dtype)


def observation_spec(space: Any, env_id: str, shape: tuple | None = None) -> tf.TensorSpec:
    """The spec of one observation (``shape``: the frames' layout after the plugin moves their axes)."""
    if not isinstance(space, spaces.Box):
        raise _unsupported(space, "observation", env_id)
    return tf.TensorSpec(space.shape if shape is None else shape, tf.as_dtype(observation_dtype(space)))


def action_spec(space: Any, env_id: str) -> BoundedTensorSpec:
    """The spec of one action: ``Discrete(n)`` -> int32 in ``[0, n - 1]``; a float ``Box`` -> float32 in its bounds."""
    if isinstance(space, spaces.Discrete) and int(space.start) == 0:
        return BoundedTensorSpec((), tf.int32, 0, int(space.n) - 1)
    if isinstance(space, spaces.Box) and np.issubdtype(space.dtype, np.floating):
        return BoundedTensorSpec(space.shape, tf.float32, space.low.astype(np.float32), space.high.astype(np.float32))
    raise _unsupported(space, "action", env_id)
