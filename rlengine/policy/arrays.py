"""Numpy nests in and out of :class:`rlengine.Policy`: one observation or a batch, checked against the specs.

The flattener of a spec nest is built once, as closures (like the Gymnasium
plugin's converters), so a single-leaf observation costs one ``np.asarray``
and a shape check per call. Leaves come out in ``tf.nest.flatten`` order
(dict keys sorted), the order the traced step takes them in.

No TensorFlow: a spec leaf is anything with a ``shape`` and a ``dtype``, a
``tf.TensorSpec`` or the :class:`Leaf` a cached policy reads back
(:mod:`rlengine.policy.cache`), and nests are dicts, tuples and lists.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable, NamedTuple, Optional

import numpy as np

from rlengine.errors import SpecMismatchError

Flattener = Callable[[Any, list], None]
Nest = Any


class Leaf(NamedTuple):
    """One array of a nest: its shape (None for an unknown dimension) and numpy dtype."""

    shape: tuple
    dtype: np.dtype


def leaf_of(spec: Any) -> Leaf:
    """The :class:`Leaf` of a ``tf.TensorSpec`` (or of a Leaf)."""
    shape = spec.shape.as_list() if hasattr(spec.shape, "as_list") else spec.shape
    return Leaf(tuple(shape), np.dtype(getattr(spec.dtype, "as_numpy_dtype", spec.dtype)))


def is_leaf(spec: Any) -> bool:
    return not isinstance(spec, (Mapping, tuple, list)) or isinstance(spec, Leaf)


def flatten(nest: Nest) -> list:
    """The leaves of ``nest`` in ``tf.nest.flatten`` order (dict keys sorted)."""
    if is_leaf(nest):
        return [nest]
    items = [nest[key] for key in sorted(nest)] if isinstance(nest, Mapping) else nest
    return [leaf for item in items for leaf in flatten(item)]


def pack(structure: Nest, leaves: list) -> Nest:
    """``leaves`` (in :func:`flatten` order) in the shape of ``structure``."""
    values = iter(leaves)

    def build(spec: Nest) -> Nest:
        if is_leaf(spec):
            return next(values)
        if isinstance(spec, Mapping):
            return {key: build(spec[key]) for key in sorted(spec)}
        items = [build(item) for item in spec]
        return type(spec)(*items) if hasattr(spec, "_fields") else type(spec)(items)

    return build(structure)


def _describe(value: Any) -> str:
    if isinstance(value, Mapping):
        return f"a dict with keys {sorted(map(str, value))}"
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)}"
    return f"a {type(value).__name__}"


def _flattener(spec: Nest, path: str) -> Flattener:
    """A function appending the leaves of a value shaped like ``spec`` to a list, in flatten order."""
    if is_leaf(spec):
        return lambda value, out: out.append(value)
    if isinstance(spec, Mapping):
        keys = sorted(spec)
        parts = [(key, _flattener(spec[key], f"{path}[{key!r}]")) for key in keys]

        def flatten_dict(value: Any, out: list) -> None:
            if not isinstance(value, Mapping) or len(value) != len(keys) or any(k not in value for k in keys):
                raise SpecMismatchError(f"{path} is {_describe(value)}: expected a dict with keys {keys}")
            for key, flatten in parts:
                flatten(value[key], out)

        return flatten_dict
    items = [_flattener(sub, f"{path}[{i}]") for i, sub in enumerate(spec)]

    def flatten_sequence(value: Any, out: list) -> None:
        if not isinstance(value, (tuple, list)) or len(value) != len(items):
            raise SpecMismatchError(f"{path} is {_describe(value)}: expected a tuple of {len(items)}")
        for flatten_item, sub in zip(items, value):
            flatten_item(sub, out)

    return flatten_sequence


def _paths(spec: Nest, path: str) -> list:
    """The name of every leaf of ``spec`` (``observation['position']``), in flatten order."""
    if is_leaf(spec):
        return [path]
    if isinstance(spec, Mapping):
        return [p for key in sorted(spec) for p in _paths(spec[key], f"{path}[{key!r}]")]
    return [p for i, sub in enumerate(spec) for p in _paths(sub, f"{path}[{i}]")]


def _shape_text(shape: tuple) -> str:
    """``(2,)``, ``(B, 84, 84)``; an unknown dimension is ``?``."""
    return "(" + ", ".join("?" if d is None else str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


class NestLayout:
    """How the leaves of a nest described by ``spec`` become batched arrays of the spec's dtypes, and back."""

    def __init__(self, spec: Nest, name: str):
        self.spec = spec
        self.specs = [leaf_of(s) for s in flatten(spec)]
        self.paths = _paths(spec, name)
        self._flatten = None if is_leaf(spec) else _flattener(spec, name)
        self._dtypes = [s.dtype for s in self.specs]
        self._shapes = [s.shape for s in self.specs]
        self._complete = [None not in shape for shape in self._shapes]

    def leaves(self, value: Any) -> list:
        if self._flatten is None:
            return [value]
        out: list = []
        self._flatten(value, out)
        return out

    def arrays(self, value: Any) -> tuple[list, Optional[int]]:
        """``(batched arrays, batch size)``; the batch size is None for one (unbatched) observation."""
        arrays: list = []
        batch: Optional[int] = -1  # -1: not known yet
        for i, leaf in enumerate(self.leaves(value)):
            array, leaf_batch = self._array(i, leaf)
            if batch == -1:
                batch = leaf_batch
            elif leaf_batch != batch:
                raise SpecMismatchError(f"{self.paths[i]} is {self._what(leaf_batch)} but {self.paths[0]} is "
                                        f"{self._what(batch)}: every leaf must have the same batch dimension")
            arrays.append(array)
        return arrays, batch

    @staticmethod
    def _what(batch: Optional[int]) -> str:
        return "one observation" if batch is None else f"a batch of {batch}"

    def _array(self, i: int, leaf: Any) -> tuple[np.ndarray, Optional[int]]:
        try:
            array = np.asarray(leaf, dtype=self._dtypes[i])
        except (TypeError, ValueError) as exc:
            raise SpecMismatchError(f"{self.paths[i]} cannot be read as {self.specs[i].dtype.name} "
                                    f"({str(exc).splitlines()[0]})") from None
        if not array.flags.c_contiguous:  # a slice: the interpreter copies from contiguous memory only
            array = np.ascontiguousarray(array)
        shape = self._shapes[i]
        if array.shape == shape:
            return array.reshape((1, *shape)), None
        if array.shape[1:] == shape and array.ndim:
            return array, array.shape[0]
        if not self._complete[i]:  # a spec with unknown dimensions: match them loosely
            for batched, dims in ((False, array.shape), (True, array.shape[1:])):
                if len(dims) == len(shape) and all(s is None or s == d for s, d in zip(shape, dims)):
                    return (array, array.shape[0]) if batched else (array[None], None)
        raise SpecMismatchError(f"{self.paths[i]} has shape {_shape_text(array.shape)}: expected "
                                f"{_shape_text(shape)} for one observation or {_shape_text(('B', *shape))} "
                                "for a batch of B")

    def pack(self, arrays: list, single: bool) -> Nest:
        """The nest of ``arrays`` (batched), without the batch dimension when ``single``."""
        if single:
            arrays = [a[0] for a in arrays]
        if self._flatten is None:
            return arrays[0]
        return pack(self.spec, arrays)
