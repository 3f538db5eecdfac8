"""The Encoder interface: the network that turns an observation nest into features.

Encoders are a plugin kind (``rlengine_register_networks``): an algorithm
names the encoder it wants in its own config (``ppo.encoder = "nature_cnn"``)
and the encoder's options live in the encoder's own TOML section
(``[nature_cnn]``). An algorithm builds and uses its encoders like this::

    class MyAlgorithm(rlengine.Algorithm):
        def __init__(self, time_step_spec, action_spec, config):
            super().__init__(time_step_spec, action_spec, config)
            self.encoder = self.make_encoder(config.encoder)   # the run's observation spec, action mask left out
            self.head = Dense(self.encoder.output_size, ...)   # the width is known at once

        def rollout(self, time_step, state):
            features = self.encoder(time_step.observation)     # [B, output_size] float32
            ...

An encoder creates all its variables in ``__init__`` from the observation
spec (no lazy building), so an algorithm can copy it at once, e.g. for a
target network (:meth:`Encoders.copy`). It ignores an ``action_mask`` leaf
if the observation has one: that is for the action head, not the encoder
(:func:`action_mask_of`).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Mapping
from typing import Any, Callable, ClassVar, Iterator, Optional

import tensorflow as tf

from rlengine.api.data import Nest, zeros_from_spec
from rlengine.api.noconfig import NoConfig

#: The observation key of a legal-action mask (Gymnasium / PettingZoo convention):
#: ``1`` where the action is legal, ``0`` where not, one entry per discrete action.
ACTION_MASK_KEY = "action_mask"


class Encoder(tf.Module):
    """Base class of every network plugin: observation nest ``[B, ...]`` -> ``[B, output_size]`` float32.

    Subclasses set ``config_class`` (an attrs class; its TOML section is the
    registered name) and ``output_size`` in ``__init__``, create every
    variable there, and implement ``__call__``. They must work inside
    ``tf.function`` and accept any leading batch size.

    ``super().__init__`` keeps ``self.observation_spec`` (the nest this
    encoder reads, untracked by ``tf.Module``), ``self.config`` (the
    instance of ``config_class``) and ``self.output_size`` (0 until the
    subclass sets it).
    """

    config_class: ClassVar[type] = NoConfig

    def __init__(self, observation_spec: Nest, config: Any = None, name: str = "encoder"):
        super().__init__(name=name)
        object.__setattr__(self, "observation_spec", observation_spec)  # untracked: specs hold no variables
        self.config = config
        self.output_size: int = 0

    def __call__(self, observation: Nest) -> tf.Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement __call__()")


def action_mask_of(observation: Nest) -> Optional[Any]:
    """The ``action_mask`` leaf of a dict observation, or ``None``."""
    if isinstance(observation, Mapping) and ACTION_MASK_KEY in observation:
        return observation[ACTION_MASK_KEY]
    return None


def without_action_mask(observation: Nest) -> Nest:
    """The observation nest (or spec) with its ``action_mask`` leaf left out."""
    if isinstance(observation, Mapping) and ACTION_MASK_KEY in observation:
        return {k: v for k, v in observation.items() if k != ACTION_MASK_KEY}
    return observation


class Encoders:
    """Makes the run's encoders by registered name; the core hands one to algorithms while it builds them.

    ``lookup(name)`` returns ``(encoder class, its config section)``, or with a
    third item naming its plugin for error messages, and raises a one-line
    error naming the close matches for an unknown name. Every encoder made is
    checked against the contract once (:func:`check_encoder`).
    """

    def __init__(self, lookup: Callable[[str], tuple]):
        self._lookup = lookup

    def make(self, name: str, observation_spec: Nest, scope: str = "encoder") -> Encoder:
        return self._built(name, observation_spec, scope, checked=True)

    def _built(self, name: str, observation_spec: Nest, scope: str, checked: bool) -> Encoder:
        cls, config, *origin = self._lookup(name)  # origin: "plugin 'x' (distribution version)", when known
        encoder = cls(observation_spec, config, name=scope)
        if checked:
            check_encoder(encoder, f"encoder {name!r} ({cls.__module__}.{cls.__qualname__}"
                                   + (f", {origin[0]})" if origin else ")"))
        object.__setattr__(encoder, "registered_name", name)
        return encoder

    def copy(self, encoder: Encoder, scope: str) -> Encoder:
        """A non-trainable copy with the same values, e.g. a target network's encoder."""
        def not_trainable(next_creator: Callable, **kwargs: Any) -> tf.Variable:
            return next_creator(**{**kwargs, "trainable": False})

        with tf.variable_creator_scope(not_trainable):
            # its source passed the contract check; the copy is the same class on the same spec
            target = self._built(encoder.registered_name, encoder.observation_spec, scope, checked=False)
        for t, s in zip(target.variables, encoder.variables):
            t.assign(s)
        return target


def check_encoder(encoder: Encoder, label: str) -> None:
    """The encoder contract, checked once where the encoder is built: a positive ``output_size``, every
    variable made in ``__init__``, and features ``[B, output_size]`` float32 for a batch of zeros.

    A width other than the declared one would fail later in a matmul of the algorithm's, and weights made
    on first call would be missing from a target network's copy.
    """
    from rlengine.errors import PluginError

    if not isinstance(encoder.output_size, int) or encoder.output_size < 1:
        raise PluginError(f"{label} set no positive output_size in __init__ (got {encoder.output_size!r}); set "
                          "it to its feature width")
    if not tf.executing_eagerly():  # built inside a graph: its call is checked where the graph runs
        return
    made = len(encoder.variables)
    features = encoder(zeros_from_spec(encoder.observation_spec, [2]))
    if len(encoder.variables) != made:
        raise PluginError(f"{label} made {len(encoder.variables) - made} variable(s) on its first call; make every "
                          "variable in __init__ (a target network's copy would not have them, nor a checkpoint "
                          "written before the first call)")
    shape, dtype = getattr(features, "shape", None), getattr(features, "dtype", None)
    if dtype != tf.float32 or shape is None or tuple(shape) != (2, encoder.output_size):
        got = f"{dtype.name if dtype is not None else type(features).__name__} {list(shape) if shape is not None else ''}"
        raise PluginError(f"{label} returned {got.strip()} for a batch of 2 observations, where its output_size "
                          f"declares float32 [2, {encoder.output_size}]; return [batch, output_size] float32 "
                          "features, or set output_size to the width it returns")


_CURRENT: contextvars.ContextVar[Optional[Encoders]] = contextvars.ContextVar("rlengine_encoders", default=None)


@contextlib.contextmanager
def encoders_in_scope(encoders: Encoders) -> Iterator[Encoders]:
    """Make ``encoders`` the ones :func:`current_encoders` returns while the block runs (the core builds
    algorithms inside it)."""
    token = _CURRENT.set(encoders)
    try:
        yield encoders
    finally:
        _CURRENT.reset(token)


def current_encoders() -> Encoders:
    encoders = _CURRENT.get()
    if encoders is None:
        raise RuntimeError("encoders are made while the core builds the algorithm (rlengine.Engine, rlengine.load); "
                           "build the algorithm through a run, or inside rlengine.api.network.encoders_in_scope()")
    return encoders
