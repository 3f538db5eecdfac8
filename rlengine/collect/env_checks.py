"""Checks of what an environment returns: the arrays its spec promises, and finite values.

Both kinds of fault are deterministic (the same code returns the same wrong
array again), so :class:`rlengine.collect.faults.GuardedEnvironment` stops
the run on them instead of restarting the environment. Unchecked, a wrong
shape or dtype surfaces later as a TensorFlow error that names no
environment and no field.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np
import tensorflow as tf

from rlengine.api.data import TimeStep
from rlengine.errors import EnvironmentOutputMismatch, NonFiniteObservation


def leaf_paths(nest: Any, prefix: str) -> list[str]:
    """Names of the leaves of ``nest`` in ``tf.nest.flatten`` order (dict keys sorted)."""
    if isinstance(nest, dict):
        return [p for k in sorted(nest) for p in leaf_paths(nest[k], f"{prefix}[{k!r}]")]
    if isinstance(nest, tuple) and hasattr(nest, "_fields"):
        return [p for k, v in zip(nest._fields, nest) for p in leaf_paths(v, f"{prefix}.{k}".lstrip("."))]
    if isinstance(nest, (list, tuple)):
        return [p for i, v in enumerate(nest) for p in leaf_paths(v, f"{prefix}[{i}]")]
    return [prefix]


class TimeStepCheck:
    """Checks batched time steps of one environment against its spec, fast enough for every step.

    ``name`` is how errors call the environment (``"environment 'x'"``),
    ``copies`` which of its copies it batches (``"copies 0..7"``), ``origin``
    who made it (:func:`environment_origin`, asked only for an error).
    """

    def __init__(self, spec: TimeStep, num_envs: int, name: str, copies: str = "", first_env_id: int = 0,
                 origin: Callable[[], str] = lambda: ""):
        self.name, self.copies, self.num_envs, self.first_env_id = name, copies, num_envs, first_env_id
        self.origin = origin
        flat = tf.nest.flatten(spec)
        self.fields = leaf_paths(spec, "")
        self.shapes = [(num_envs, *s.shape.as_list()) for s in flat]
        self.dtypes = [None if s.dtype == tf.string else np.dtype(s.dtype.as_numpy_dtype) for s in flat]
        self._expected = list(zip(self.shapes, self.dtypes))  # what ndarrays that fit show (never equal with None)
        # each field of the spec one array (no dict of observations): a time step's fields are its leaves
        self._fields_are_leaves = type(spec) is TimeStep and not any(tf.nest.is_nested(field) for field in spec)
        self.finite = [i for i, (field, s) in enumerate(zip(self.fields, flat))  # float rewards and observations
                       if (field == "reward" or field.startswith("observation")) and s.dtype.is_floating]

    # -- shapes and dtypes ------------------------------------------------------------------------
    def check_spec(self, time_step: Any, what: str) -> list:
        """Raise :class:`EnvironmentOutputMismatch` naming the field unless every array fits the spec;
        return the leaves (flattened once for the checks that follow)."""
        as_fields = self._fields_are_leaves and type(time_step) is TimeStep  # its fields are its leaves: no flatten
        leaves = list(time_step) if as_fields else _flat(time_step)
        if [(getattr(leaf, "shape", None), getattr(leaf, "dtype", None)) for leaf in leaves] == self._expected:
            return leaves  # every step of a sound environment: one comparison, no conversion
        if as_fields:  # a wrong array or a nested field: the search goes through the nest's own leaves
            leaves = _flat(time_step)
        if len(leaves) != len(self.fields):
            raise self._mismatch(what, f"it is {type(time_step).__name__} of {len(leaves)} array(s), "
                                       f"expected a TimeStep of {len(self.fields)}")
        for field, leaf, shape, dtype in zip(self.fields, leaves, self.shapes, self.dtypes):
            problem = leaf_problem(leaf, shape, dtype)
            if problem:
                raise self._mismatch(what, f"{field} {problem}")
        return leaves

    def _mismatch(self, what: str, problem: str) -> EnvironmentOutputMismatch:
        where = f" ({self.copies})" if self.copies else ""
        return EnvironmentOutputMismatch(
            f"{self.name}: {what}() time step does not match its time_step_spec(){where}: {problem}; "
            f"it is not restarted (the same code would return it again); fix the environment{self.origin()} "
            "or its time_step_spec()")

    def observation_promise(self) -> str:
        """What the spec promises for the observation, e.g. ``observation float32 (2, 4)`` (num_envs first)."""
        return ", ".join(f"{field} {dtype or 'string'} {tuple('?' if d is None else d for d in shape)}"
                         for field, shape, dtype in zip(self.fields, self.shapes, self.dtypes)
                         if field.startswith("observation"))

    # -- finite values ----------------------------------------------------------------------------
    def check_finite(self, leaves: list, what: str) -> None:
        """One vectorised check per float leaf of the flat ``leaves``; the slow search runs only when one fails.

        Counting the finite values is half what ``np.isfinite(leaf).all()`` costs on a CartPole batch (every
        step pays it; docs/performance.md): NumPy's ``all`` goes through its general reduction. Nothing
        here does arithmetic on the values, so a NaN or an infinity raises no NumPy warning.
        """
        for i in self.finite:
            leaf = np.asarray(leaves[i])
            if np.count_nonzero(np.isfinite(leaf)) != leaf.size:
                bad = [int(j) for j in np.argwhere(~np.isfinite(leaf))[0]]
                copy, element = bad[0], "".join(f"[{j}]" for j in bad[1:])
                raise NonFiniteObservation(
                    f"{self.name} returned a non-finite {self.fields[i]}{element} = {leaf[tuple(bad)]} "
                    f"for copy {copy} (env_id {self.first_env_id + copy}) in {what}(); fix the environment, "
                    "or clip or replace non-finite values before they reach the agent")


def environment_origin(env_class: type) -> str:
    """`` (module.Class, from distribution version)``: which code, from which installed plugin, made an
    environment. It reads every installed distribution's metadata, too slow for each environment made: errors
    alone ask."""
    import importlib.metadata as metadata

    where = f"{env_class.__module__}.{env_class.__qualname__}"
    try:
        names = metadata.packages_distributions().get(env_class.__module__.split(".")[0]) or []
        return f" ({where}, from {names[0]} {metadata.version(names[0])})" if names else f" ({where})"
    except Exception:  # broken metadata must not hide the error being reported
        return f" ({where})"


def _flat(nest: Any) -> list:
    """The leaves of ``nest`` in ``tf.nest.flatten`` order (none for None)."""
    return [] if nest is None else tf.nest.flatten(nest)


def leaf_problem(leaf: Any, shape: tuple, dtype: Optional[np.dtype]) -> str:
    """What is wrong with one array ('' when nothing): what ``tf.numpy_function`` would refuse."""
    array = leaf if isinstance(leaf, np.ndarray) else np.asarray(leaf)
    if dtype is not None and array.dtype != dtype:
        return f"has dtype {array.dtype}, expected {dtype}" + (" (cast it)" if array.shape == shape else "")
    if len(array.shape) != len(shape) or any(e is not None and e != a for e, a in zip(shape, array.shape)):
        expected = tuple("?" if e is None else e for e in shape)
        return f"has shape {tuple(array.shape)}, expected {expected} (num_envs, then the spec's shape)"
    return ""
