"""The ``normalize`` transformer: running standardisation of float observations.

Every floating-point leaf of the observation nest becomes
``clip((x - mean) / sqrt(var + epsilon), -clip, clip)``; other leaves (e.g.
uint8 images not yet scaled) pass through unchanged.

The statistics are ``tf.Variable`` s owned by the transformer, so they are
checkpointed with the run: ``mean`` and ``var`` are lists with one variable
per float leaf (in ``tf.nest.flatten`` order, shaped like that leaf) and
``count`` is the number of observations merged so far (shared: every leaf
of a batch has the same number of rows). They are float64, so merging
millions of observations does not lose precision. Only ``update`` changes
them, merging the moments of each collected batch with the parallel
formula of Chan, Golub and LeVeque.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
import tensorflow as tf

from rlengine import ConfigError, ObservationTransformer, SpecMismatchError, action_mask_of
from rlengine_transformers.specs import flatten_like, number, plain, with_changes


@attrs.define
class NormalizeConfig:
    """Options of the ``normalize`` transformer (TOML section ``[normalize]``)."""

    # Standardised values are clipped to [-clip, clip] (outliers stay bounded).
    clip: float = attrs.field(default=10.0, validator=[number, attrs.validators.gt(0)])
    # Added to the variance before the square root, so constant features do not divide by zero.
    epsilon: float = attrs.field(default=1e-8, validator=[number, attrs.validators.gt(0)])


def _is_float(spec: tf.TensorSpec) -> bool:
    return spec.dtype.is_floating


def _normalized(observation_spec: Any) -> list:
    """Per flattened leaf: whether it is normalised. Float leaves are, except an ``action_mask``
    (its zeros mean "illegal" and must stay zeros)."""
    flags = tf.nest.map_structure(_is_float, observation_spec)
    if action_mask_of(flags) is not None:
        flags = {**flags, "action_mask": False}
    return tf.nest.flatten(flags)


def _moments(x: Any, spec: tf.TensorSpec) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """Row count, mean and (population) variance of ``x`` over its leading dims.

    The leading dims are those not in the spec: ``[B]``, ``[T, B]``, ...
    """
    x = tf.cast(x, tf.float64)
    lead = None if x.shape.rank is None else x.shape.rank - spec.shape.rank
    if lead is None or lead < 0 or not x.shape[lead:].is_compatible_with(spec.shape):
        raise SpecMismatchError(
            f"normalize.update: got shape {x.shape} for an observation of shape {spec.shape}"
        )
    axes = list(range(lead))
    n = tf.cast(tf.reduce_prod(tf.shape(x)[:lead]), tf.float64)
    # divide_no_nan: an empty batch gives zeros, which the merge then weighs by n = 0.
    mean = tf.math.divide_no_nan(tf.reduce_sum(x, axes), n)
    var = tf.math.divide_no_nan(tf.reduce_sum(tf.square(x - mean), axes), n)
    return n, mean, var


def _moments_between(count_a: float, mean_a: np.ndarray, var_a: np.ndarray, count_b: float,
                     mean_b: np.ndarray, var_b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance of the rows that took running moments from ``a`` to ``b`` (Chan's merge, inverted)."""
    n = count_b - count_a
    batch_mean = (count_b * mean_b - count_a * mean_a) / n
    delta = batch_mean - mean_a
    m2 = var_b * count_b - var_a * count_a - np.square(delta) * count_a * n / count_b
    return batch_mean, np.maximum(m2 / n, 0.0)


def _statistic(initial_value: tf.Tensor, name: str) -> tf.Variable:
    return tf.Variable(initial_value, trainable=False, name=name)


class Normalize(ObservationTransformer):
    """Standardises float leaves with running mean and variance."""

    config_class = NormalizeConfig

    def __init__(self, observation_spec: Any, config: NormalizeConfig):
        super().__init__(observation_spec, config)
        #: Per flattened leaf: whether it is normalised.
        self._float_mask = _normalized(observation_spec)
        self._float_specs = float_specs = [s for s, f in zip(tf.nest.flatten(observation_spec), self._float_mask) if f]
        if not float_specs:
            raise ConfigError(
                f"normalize: the observation has no float leaves (spec {observation_spec}); "
                "for uint8 images list image_scale before normalize in train.transformers"
            )
        for spec in float_specs:
            if not spec.shape.is_fully_defined():
                raise SpecMismatchError(f"normalize needs fully defined observation shapes, got {spec.shape}")
        with self.name_scope:
            # var starts at 1 so that, before any update, transform only clips.
            self.mean = [_statistic(tf.zeros(s.shape, tf.float64), "mean") for s in float_specs]
            self.var = [_statistic(tf.ones(s.shape, tf.float64), "var") for s in float_specs]
            self.count = tf.Variable(0.0, dtype=tf.float64, trainable=False, name="count")

    @property
    def output_spec(self) -> Any:
        spec = plain(self.input_spec)
        leaves = [with_changes(s) if f else s for s, f in zip(tf.nest.flatten(spec), self._float_mask)]
        return tf.nest.pack_sequence_as(spec, leaves)

    def _float_leaves(self, observation: Any) -> list:
        """The float leaves of ``observation``, in the order of ``mean`` and ``var``."""
        (leaves,) = flatten_like(self.input_spec, observation)
        return [x for x, is_float in zip(leaves, self._float_mask) if is_float]

    def transform(self, observation: Any, step_type: Any, state: Any) -> tuple[Any, Any]:
        (leaves,) = flatten_like(self.input_spec, observation)
        stats = iter(zip(self.mean, self.var))  # one (mean, var) per float leaf, in order
        out = [self._standardize(x, *next(stats)) if f else x for x, f in zip(leaves, self._float_mask)]
        return tf.nest.pack_sequence_as(observation, out), state

    def _standardize(self, x: Any, mean: tf.Variable, var: tf.Variable) -> tf.Tensor:
        x = tf.convert_to_tensor(x)
        clip = float(self.config.clip)
        # epsilon is added in float64, where 1e-8 cannot underflow.
        inv_std = tf.cast(tf.math.rsqrt(var + float(self.config.epsilon)), x.dtype)
        return tf.clip_by_value((x - tf.cast(mean, x.dtype)) * inv_std, -clip, clip)

    def update(self, observation: Any) -> None:
        leaves = self._float_leaves(observation)
        n = tf.constant(0.0, tf.float64)
        for spec, x, mean, var in zip(self._float_specs, leaves, self.mean, self.var):
            n, batch_mean, batch_var = _moments(x, spec)
            self._merge(mean, var, n, batch_mean, batch_var)
        # After all leaves: each merge above needs the count before this batch.
        self.count.assign_add(n)

    def merge_updates(self, before: list, after: list) -> None:
        """Merge what a remote copy saw between ``before`` and ``after`` (its variables, in
        ``self.variables`` order): the moments of its new rows, recovered from both, then merged as in
        :meth:`update`, so the result is as if this transformer had seen those rows itself."""
        index = {v.ref(): i for i, v in enumerate(self.variables)}
        old = lambda v: np.asarray(before[index[v.ref()]], np.float64)  # noqa: E731
        new = lambda v: np.asarray(after[index[v.ref()]], np.float64)  # noqa: E731
        count_before, count_after = float(old(self.count)), float(new(self.count))
        n = count_after - count_before
        if n <= 0:
            return
        for mean, var in zip(self.mean, self.var):
            batch_mean, batch_var = _moments_between(count_before, old(mean), old(var),
                                                     count_after, new(mean), new(var))
            self._merge(mean, var, tf.constant(n, tf.float64), batch_mean, batch_var)
        self.count.assign_add(n)

    def _merge(
        self, mean: tf.Variable, var: tf.Variable, n: tf.Tensor, batch_mean: tf.Tensor, batch_var: tf.Tensor
    ) -> None:
        """Fold one batch's moments into ``mean`` and ``var`` (``count`` is advanced by the caller)."""
        count = tf.convert_to_tensor(self.count)
        total = count + n
        weight = tf.math.divide_no_nan(n, total)  # the batch's share of all rows
        delta = batch_mean - mean
        # Sum of squared deviations: M2_a + M2_b + delta^2 * n_a * n_b / (n_a + n_b).
        m2 = var * count + batch_var * n + tf.square(delta) * count * weight
        mean.assign_add(delta * weight)
        # With no rows at all (empty first batch) keep the initial variance.
        var.assign(tf.where(total > 0, tf.math.divide_no_nan(m2, total), var))
