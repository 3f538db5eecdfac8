"""Where a run's TensorFlow work goes (``train.device``, ``train.actor_device``).

The learner (the algorithm's variables, its optimizer, every update) runs on ``train.device``;
the policy that acts for the environments runs on ``train.actor_device``, by default the
learner's device (an actor then reads the learner's variables where they are). Environments
step in host memory and the replay buffer is kept there whatever the devices: it can be large,
and sampling moves only a minibatch to the learner. Both settings take TensorFlow's device
names (``"/GPU:0"``, ``"/CPU:0"``); empty leaves the choice to TensorFlow (its first GPU if
there is one). Pipelines use it so::

    with on_device(actor_device(config.train)):    # inside the traced collection function
        action = algorithm.rollout(time_step, state)
"""

from __future__ import annotations

import contextlib
from typing import Any, ContextManager

#: Where the replay buffer and other host-side state live.
HOST = "/CPU:0"


def on_device(device: str) -> ContextManager:
    """``tf.device(device)``, or nothing when ``device`` is empty (TensorFlow's choice)."""
    if not device:
        return contextlib.nullcontext()
    import tensorflow as tf

    return tf.device(device)


def actor_device(train: Any) -> str:
    """The device actors run the policy on: ``train.actor_device``, else the learner's ``train.device``."""
    return train.actor_device or train.device


def checked_device(key: str, device: str) -> str:
    """``device`` if TensorFlow has such a logical device (or it is empty), else a ConfigError naming ``key``."""
    if not device:
        return device
    import tensorflow as tf

    from rlengine.errors import ConfigError

    known = [d.name for d in tf.config.list_logical_devices()]
    try:
        wanted = tf.DeviceSpec.from_string(device)
    except ValueError:
        wanted = None
    if wanted is None or wanted.device_type is None or not any(_same(wanted, name) for name in known):
        shown = ", ".join(name.replace("/device:", "/") for name in known)
        raise ConfigError(f"{key} = {device!r} is not a device of this machine (TensorFlow sees {shown}); "
                          f"choose one of those, or leave {key} empty for TensorFlow's choice")
    return device


def _same(wanted: Any, name: str) -> bool:
    import tensorflow as tf

    have = tf.DeviceSpec.from_string(name)
    return (wanted.device_type.upper() == have.device_type.upper()
            and (wanted.device_index is None or wanted.device_index == have.device_index))
