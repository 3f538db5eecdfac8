"""The distribution converters: store action distributions as tensors and rebuild them.

Experience goes into tensor arrays, queues and replay buffers, which hold
tensors only. So the core turns every ``tfp`` distribution in a nest into a
dict of its tensor parameters, and remembers in the spec nest a
:class:`DistributionSpec` leaf that says how to rebuild it. Converters are
registered per distribution class by the ``rlengine_register_distributions``
hook; the built-in ones are registered by :mod:`rlengine.builtin.distributions`.
"""

from __future__ import annotations

from typing import Any, Callable

import tensorflow as tf
import tensorflow_probability as tfp

from rlengine.errors import RegistryError
from rlengine.plugin.registry import Registry

tfd = tfp.distributions


class DistributionSpec:
    """Leaf of a spec nest standing for a distribution.

    ``params`` is a dict of ``tf.TensorSpec`` (no batch dimension),
    ``static`` holds non-tensor constructor arguments (e.g. action bounds).
    """

    def __init__(self, name: str, params: dict, static: dict):
        self.name = name
        self.params = params
        self.static = static

    def __repr__(self) -> str:
        return f"DistributionSpec({self.name!r}, params={self.params!r})"

    def __eq__(self, other: Any) -> bool:
        return (
            isinstance(other, DistributionSpec)
            and self.name == other.name
            and self.params == other.params
            and _static_key(self.static) == _static_key(other.static)
        )


def _static_key(static: dict) -> tuple:
    return tuple(sorted((k, repr(v)) for k, v in static.items()))


class Converters:
    """The distribution converters of one run, looked up by exact class."""

    def __init__(self, registry: Registry):
        self._by_class: dict[type, tuple[str, Callable, Callable]] = {}
        self._by_name: dict[str, tuple[str, Callable, Callable]] = {}
        for entry in registry:
            triple = (entry.obj, *entry.extra) if entry.extra or not entry.lazy else tuple(entry.obj)
            if len(triple) != 3 or not all(callable(f) for f in triple):
                raise RegistryError(
                    f"plugin {entry.plugin!r} registered distribution {entry.name!r} without "
                    "to_params and from_params functions: use register(name, cls, to_params, from_params), or "
                    "register(name, 'module:TRIPLE') naming a (cls, to_params, from_params) tuple"
                )
            item = (entry.name, *triple[1:])
            self._by_class[triple[0]] = item
            self._by_name[entry.name] = item

    def _lookup(self, dist: tfp.distributions.Distribution) -> tuple[str, Callable, Callable]:
        try:
            return self._by_class[type(dist)]
        except KeyError:
            raise RegistryError(
                f"no converter for distribution {type(dist).__name__}; known: "
                f"{', '.join(sorted(self._by_name))}. Register one with rlengine_register_distributions"
            ) from None

    def to_params(self, nest: Any) -> Any:
        """Replace every distribution in ``nest`` by a dict of its tensor parameters."""
        return tf.nest.map_structure(self._leaf_to_params, nest)

    def _leaf_to_params(self, leaf: Any) -> Any:
        if not isinstance(leaf, tfd.Distribution):
            return leaf
        _, to_params, _ = self._lookup(leaf)
        return {k: v for k, v in to_params(leaf).items() if tf.is_tensor(v)}

    def spec_of(self, nest: Any, outer_dims: int = 1) -> Any:
        """Spec nest of ``nest``: TensorSpecs, and DistributionSpecs for distributions."""
        return tf.nest.map_structure(lambda leaf: self._leaf_spec(leaf, outer_dims), nest)

    def _leaf_spec(self, leaf: Any, outer_dims: int) -> Any:
        if isinstance(leaf, tfd.Distribution):
            name, to_params, _ = self._lookup(leaf)
            raw = to_params(leaf)
            params = {k: tensor_spec(v, outer_dims) for k, v in raw.items() if tf.is_tensor(v)}
            static = {k: v for k, v in raw.items() if not tf.is_tensor(v)}
            return DistributionSpec(name, params, static)
        return tensor_spec(leaf, outer_dims)

    def from_params(self, params: Any, spec: Any) -> Any:
        """Rebuild distributions where ``spec`` has a DistributionSpec."""
        return map_up_to(spec, params, self._rebuild)

    def _rebuild(self, spec: Any, value: Any) -> Any:
        if isinstance(spec, DistributionSpec):
            _, _, from_params = self._by_name[spec.name]
            return from_params({**value, **spec.static})
        return value


def tensor_spec(value: Any, outer_dims: int = 1) -> tf.TensorSpec:
    """Spec of one tensor without its ``outer_dims`` leading (batch) dimensions."""
    value = tf.convert_to_tensor(value)
    return tf.TensorSpec(value.shape[outer_dims:], value.dtype)


def params_spec(spec: Any) -> Any:
    """Replace DistributionSpec leaves by their parameter dicts (what is stored)."""
    return tf.nest.map_structure(lambda s: s.params if isinstance(s, DistributionSpec) else s, spec)


def map_up_to(spec: Any, value: Any, fn: Callable[[Any, Any], Any]) -> Any:
    """Map ``fn(spec_leaf, value_subtree)`` over the leaves of ``spec``.

    ``value`` has the structure of ``spec`` except that below a spec leaf it
    may hold a whole sub-nest (the parameter dict of a distribution).
    """
    if isinstance(spec, dict):
        return type(spec)((k, map_up_to(spec[k], value[k], fn)) for k in spec)
    if isinstance(spec, tuple) and hasattr(spec, "_fields"):
        return type(spec)(*(map_up_to(s, v, fn) for s, v in zip(spec, value)))
    if isinstance(spec, (list, tuple)):
        return type(spec)(map_up_to(s, v, fn) for s, v in zip(spec, value))
    return fn(spec, value)
