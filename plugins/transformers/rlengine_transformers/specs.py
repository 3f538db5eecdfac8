"""Small helpers shared by the transformers: a validator, spec rewriting, leaf-wise mapping."""

from __future__ import annotations

from typing import Any, Callable, Mapping, Optional

import attrs
import tensorflow as tf

from rlengine import SpecMismatchError


def number(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    """attrs validator: an int or a float (TOML writes ``10`` for ``10.0``), never a bool."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{attribute.name} must be a number, got {value!r}")


def plain(nest: Any) -> Any:
    """A copy of ``nest`` with TensorFlow's tracking wrappers replaced by plain containers.

    ``tf.Module`` wraps dicts, lists and tuples assigned to its attributes
    (``self.input_spec`` included) in ``_DictWrapper`` & co., and nests
    built from those cannot be traced by ``tf.function``; every spec a
    transformer hands out is rebuilt with this first.
    """
    nest = getattr(nest, "__wrapped__", nest)  # proxies around the original dict / tuple
    if isinstance(nest, Mapping):
        return {key: plain(value) for key, value in nest.items()}
    if isinstance(nest, tuple) and hasattr(nest, "_fields"):  # namedtuple
        return type(nest)(*(plain(value) for value in nest))
    if isinstance(nest, (list, tuple)):
        return (list if isinstance(nest, list) else tuple)(plain(value) for value in nest)
    return nest


def with_changes(
    spec: tf.TensorSpec, shape: Optional[list] = None, dtype: Optional[tf.DType] = None
) -> tf.TensorSpec:
    """A plain ``tf.TensorSpec`` like ``spec`` with a new shape and/or dtype.

    Bounds of bounded specs are dropped on purpose: they describe the raw
    observation, not the transformed one.
    """
    return tf.TensorSpec(
        spec.shape if shape is None else shape,
        spec.dtype if dtype is None else dtype,
        name=getattr(spec, "name", None),
    )


def flatten_like(spec: Any, *nests: Any) -> list[list]:
    """The leaves of each nest, after checking each has as many leaves as ``spec``.

    Nests are matched to the spec by flattening, so a list observation works
    with a tuple spec; only the number of leaves must agree.
    """
    count = len(tf.nest.flatten(spec))
    flat = [tf.nest.flatten(n) for n in nests]
    for leaves in flat:
        if len(leaves) != count:
            raise SpecMismatchError(f"expected a nest of {count} tensors matching {spec}, got {len(leaves)}")
    return flat


def map_leaves(fn: Callable[..., Any], spec: Any, *nests: Any) -> Any:
    """``fn(leaf_spec, *leaves)`` over every leaf, packed like the first of ``nests``."""
    flat = flatten_like(spec, *nests)
    results = [fn(s, *xs) for s, *xs in zip(tf.nest.flatten(spec), *flat)]
    return tf.nest.pack_sequence_as(nests[0], results)
