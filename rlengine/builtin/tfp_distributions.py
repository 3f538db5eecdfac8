"""The built-in distributions, all TensorFlow Probability's: :class:`SquashedNormal` (SAC's policy), and
for each of the seven its converter ``(class, to_params, from_params)`` (:data:`CONVERTERS`).

:mod:`rlengine.builtin.distributions` registers them by name. They live apart from that plugin module
because this one imports TensorFlow Probability, which listing the plugins must not."""

from __future__ import annotations

import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp

tfd = tfp.distributions
tfb = tfp.bijectors

class SquashedNormal(tfp.distributions.TransformedDistribution):
    """A diagonal Normal squashed by tanh into ``[low, high]`` (SAC's policy).

    ``mode()`` is the squashed mean, which is what a greedy policy takes.
    """

    def __init__(self, loc, scale, low=-1.0, high=1.0, validate_args=False, name="SquashedNormal"):
        parameters = dict(locals())
        self._loc = tf.convert_to_tensor(loc)
        self._scale = tf.convert_to_tensor(scale)
        self._low = np.asarray(low, np.float32)
        self._high = np.asarray(high, np.float32)
        half = (self._high - self._low) / 2.0
        bijector = tfb.Chain([tfb.Shift(self._low + half), tfb.Scale(half), tfb.Tanh()])
        base = tfd.Independent(tfd.Normal(self._loc, self._scale), reinterpreted_batch_ndims=1)
        super().__init__(distribution=base, bijector=bijector, validate_args=validate_args,
                         parameters=parameters, name=name)
        self._parameters = parameters

    @classmethod
    def _parameter_properties(cls, dtype, num_classes=None):
        return dict(
            loc=tfp.util.ParameterProperties(event_ndims=1),
            scale=tfp.util.ParameterProperties(event_ndims=1),
        )

    @property
    def loc(self):
        return self._loc

    @property
    def scale(self):
        return self._scale

    def _mode(self, **kwargs):
        return self.bijector.forward(self._loc)


def _independent_normal(params):
    base = tfd.Normal(params["loc"], params["scale"])
    return tfd.Independent(base, reinterpreted_batch_ndims=params["reinterpreted_batch_ndims"])


def _independent_to_params(dist):
    if not isinstance(dist.distribution, tfd.Normal):
        raise TypeError(f"only Independent(Normal) is stored, got Independent({type(dist.distribution).__name__})")
    return {
        "loc": dist.distribution.loc,
        "scale": dist.distribution.scale,
        # static even inside a graph, where the attribute is a tensor
        "reinterpreted_batch_ndims": int(tf.get_static_value(dist.reinterpreted_batch_ndims)),
    }



CONVERTERS = {
    "categorical": (tfd.Categorical, lambda d: {"logits": d.logits_parameter()},
                    lambda p: tfd.Categorical(logits=p["logits"])),
    "normal": (tfd.Normal, lambda d: {"loc": d.loc, "scale": d.scale}, lambda p: tfd.Normal(p["loc"], p["scale"])),
    "independent_normal": (tfd.Independent, _independent_to_params, _independent_normal),
    "mvn_diag": (tfd.MultivariateNormalDiag, lambda d: {"loc": d.loc, "scale_diag": d.stddev()},
                 lambda p: tfd.MultivariateNormalDiag(p["loc"], p["scale_diag"])),
    "squashed_normal": (SquashedNormal, lambda d: {"loc": d.loc, "scale": d.scale, "low": d._low, "high": d._high},
                        lambda p: SquashedNormal(p["loc"], p["scale"], p["low"], p["high"])),
    "deterministic": (tfd.Deterministic, lambda d: {"loc": d.loc}, lambda p: tfd.Deterministic(p["loc"])),
    "bernoulli": (tfd.Bernoulli, lambda d: {"logits": d.logits_parameter()},
                  lambda p: tfd.Bernoulli(logits=p["logits"])),
}
