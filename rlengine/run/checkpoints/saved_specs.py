"""The environment's specs of a run, saved as ``<root_dir>/specs.json`` so that loading its policy needs
no environment (:func:`rlengine.load`).

Training writes the file when the run starts, next to ``config.toml``: the
raw time-step spec (what the environment returns, before the observation
transformers) and the action spec, per environment copy. Every leaf is a
``tf.TensorSpec`` or ``BoundedTensorSpec``; nests are dicts (string keys),
tuples and lists::

    {"format": 1,
     "time_step": {"step_type": {"shape": [], "dtype": "int32"}, ...,
                   "observation": {"dict": {"position": {"shape": [2], "dtype": "float32"}}}},
     "action": {"shape": [], "dtype": "int32", "minimum": 0, "maximum": 1}}

A spec that has another kind of leaf or nest (a namedtuple observation, a
ragged spec) is not written; loading such a run builds one environment copy
to ask it, as it does for runs trained before this file existed.
"""

from __future__ import annotations

import json
import os
from typing import Any, Optional

import numpy as np
import tensorflow as tf

from rlengine.api.data import Nest, TimeStep
from rlengine.api.specs import BoundedTensorSpec
from rlengine.errors import DamagedSpecs
from rlengine.files import write_atomically

SPECS_FILE = "specs.json"
FORMAT = 1


class UnsupportedSpec(Exception):
    """A spec nest that this file format cannot hold (not an error of the run)."""


def specs_path(root_dir: str) -> str:
    return os.path.join(root_dir, SPECS_FILE)


# -- to JSON --------------------------------------------------------------------------------
def encode(nest: Nest) -> Any:
    """A JSON-friendly form of a spec nest; :class:`UnsupportedSpec` for what it cannot hold."""
    if isinstance(nest, tf.TensorSpec):
        return _encode_leaf(nest)
    if isinstance(nest, dict):
        if not all(isinstance(key, str) for key in nest):
            raise UnsupportedSpec(f"dict keys must be strings, got {sorted(map(repr, nest))}")
        return {"dict": {key: encode(value) for key, value in nest.items()}}
    if isinstance(nest, tuple) and not hasattr(nest, "_fields"):
        return {"tuple": [encode(value) for value in nest]}
    if isinstance(nest, list):
        return {"list": [encode(value) for value in nest]}
    raise UnsupportedSpec(f"cannot save a spec of type {type(nest).__name__}")


def _encode_leaf(spec: tf.TensorSpec) -> dict:
    if spec.shape.rank is None:
        raise UnsupportedSpec("a spec of unknown rank")
    out: dict = {"shape": spec.shape.as_list(), "dtype": spec.dtype.name}
    if isinstance(spec, BoundedTensorSpec):
        # float32 bounds are exact as Python floats; infinite ones are written as JSON's Infinity
        out["minimum"] = np.asarray(spec.minimum).tolist()
        out["maximum"] = np.asarray(spec.maximum).tolist()
    return out


def encode_specs(raw_time_step: TimeStep, action: Nest) -> dict:
    """The content of ``specs.json``."""
    time_step = {field: encode(value) for field, value in raw_time_step._asdict().items()}
    return {"format": FORMAT, "time_step": time_step, "action": encode(action)}


def write_specs(root_dir: str, raw_time_step: TimeStep, action: Nest) -> bool:
    """Write ``specs.json`` atomically; False (and nothing written) when the specs cannot be saved."""
    try:
        content = encode_specs(raw_time_step, action)
    except UnsupportedSpec:
        return False  # loading will ask one environment copy instead
    write_atomically(specs_path(root_dir), json.dumps(content, indent=1) + "\n")
    return True


# -- from JSON ------------------------------------------------------------------------------
def decode(value: Any) -> Nest:
    """The spec nest :func:`encode` described."""
    if not isinstance(value, dict):
        raise ValueError(f"expected an object, got {value!r}")
    if "dict" in value:
        return {key: decode(sub) for key, sub in value["dict"].items()}
    if "tuple" in value:
        return tuple(decode(sub) for sub in value["tuple"])
    if "list" in value:
        return [decode(sub) for sub in value["list"]]
    shape, dtype = value["shape"], tf.as_dtype(value["dtype"])
    if "minimum" in value:
        np_dtype = dtype.as_numpy_dtype
        return BoundedTensorSpec(shape, dtype, np.asarray(value["minimum"], np_dtype),
                                 np.asarray(value["maximum"], np_dtype))
    return tf.TensorSpec(shape, dtype)


def decode_specs(content: Any) -> tuple[TimeStep, Nest]:
    """``(raw time-step spec, action spec)`` from the content of ``specs.json``."""
    if not isinstance(content, dict) or content.get("format") != FORMAT:
        found = content.get("format") if isinstance(content, dict) else None
        raise ValueError(f"format {found!r}, expected {FORMAT}")
    fields = content["time_step"]
    time_step = TimeStep(**{field: decode(fields[field]) for field in TimeStep._fields})
    return time_step, decode(content["action"])


def read_specs(root_dir: str) -> Optional[tuple[TimeStep, Nest]]:
    """``(raw time-step spec, action spec)`` saved in ``root_dir``, or None when it has no ``specs.json``."""
    path = specs_path(root_dir)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return None
    try:
        return decode_specs(json.loads(text))
    except (ValueError, KeyError, TypeError) as exc:  # json.JSONDecodeError is a ValueError
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DamagedSpecs(f"{path} is damaged ({reason}): delete it, and loading the run will ask one "
                           "environment copy for its specs instead") from None
