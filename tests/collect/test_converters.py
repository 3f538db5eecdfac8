import numpy as np
import pytest
import tensorflow as tf
import tensorflow_probability as tfp

from rlengine import SquashedNormal
from rlengine.collect.converters import Converters, DistributionSpec, params_spec
from rlengine.errors import RegistryError
from rlengine.plugin.registry import KIND_BY_NAME, Entry, Registry

tfd = tfp.distributions

CASES = {
    "categorical": lambda: tfd.Categorical(logits=tf.random.normal([3, 4])),
    "normal": lambda: tfd.Normal(tf.random.normal([3, 2]), tf.ones([3, 2])),
    "independent_normal": lambda: tfd.Independent(tfd.Normal(tf.zeros([3, 2]), 2 * tf.ones([3, 2])), 1),
    "mvn_diag": lambda: tfd.MultivariateNormalDiag(tf.random.normal([3, 2]), tf.ones([3, 2])),
    "squashed_normal": lambda: SquashedNormal(tf.random.normal([3, 2]), tf.ones([3, 2]), -2.0, 2.0),
    "deterministic": lambda: tfd.Deterministic(tf.random.normal([3, 2])),
    "bernoulli": lambda: tfd.Bernoulli(logits=tf.random.normal([3, 5])),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_round_trip_keeps_the_distribution(plugins, name):
    conv = Converters(plugins.registries.distributions)
    dist = CASES[name]()
    nest = {"dist": dist, "value": tf.zeros([3])}
    spec = conv.spec_of(nest)
    assert isinstance(spec["dist"], DistributionSpec) and spec["dist"].name == name
    params = conv.to_params(nest)
    assert all(tf.is_tensor(t) for t in tf.nest.flatten(params))
    assert tf.nest.flatten(params_spec(spec))  # the stored form is all tensor specs
    rebuilt = conv.from_params(params, spec)["dist"]
    assert type(rebuilt) is type(dist)
    sample = dist.sample(seed=1)
    np.testing.assert_allclose(rebuilt.log_prob(sample), dist.log_prob(sample), rtol=1e-5, atol=1e-5)


def test_squashed_normal_stays_in_bounds_and_mode_is_squashed_mean():
    d = SquashedNormal(tf.constant([[0.0, 10.0]]), tf.ones([1, 2]), -2.0, 2.0)
    s = d.sample(100)
    assert float(tf.reduce_max(tf.abs(s))) <= 2.0
    np.testing.assert_allclose(d.mode(), [[0.0, 2.0 * np.tanh(10.0)]], atol=1e-5)


def test_unknown_distribution_is_a_clear_error(plugins):
    conv = Converters(plugins.registries.distributions)
    with pytest.raises(RegistryError, match="no converter for distribution Gamma"):
        conv.to_params(tfd.Gamma(1.0, 1.0))


def test_a_plugin_can_register_a_distribution():
    reg = Registry(KIND_BY_NAME["distribution"])
    reg.add(Entry("gamma", tfd.Gamma, "myplugin",
                  (lambda d: {"concentration": d.concentration, "rate": d.rate},
                   lambda p: tfd.Gamma(p["concentration"], p["rate"]))))
    conv = Converters(reg)
    dist = tfd.Gamma(tf.ones([2]), tf.ones([2]))
    spec = conv.spec_of(dist)
    assert isinstance(conv.from_params(conv.to_params(dist), spec), tfd.Gamma)


def test_registration_without_functions_names_the_plugin():
    reg = Registry(KIND_BY_NAME["distribution"])
    reg.add(Entry("gamma", tfd.Gamma, "myplugin", ()))
    with pytest.raises(RegistryError, match="plugin 'myplugin' registered distribution 'gamma'"):
        Converters(reg)
