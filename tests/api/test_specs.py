import pytest
import tensorflow as tf

from rlengine import ObservationTransformer, PolicyStep, SpecMismatchError
from rlengine.api.data import Experience
from rlengine.collect.converters import Converters, DistributionSpec
from rlengine.collect.transformers import TransformerChain
from rlengine.run.specs import prepare_specs
from rlengine.testing import CountingEnv, ToyAlgorithm


class CountingTransformer(ObservationTransformer):
    """Doubles observations; counts its updates in a variable."""

    def __init__(self, spec, config):
        super().__init__(spec, config)
        self.updates = tf.Variable(0)

    def transform(self, observation, step_type, state):
        return observation * 2.0, state

    def update(self, observation):
        self.updates.assign_add(1)


def _prepare(algorithm_cls=ToyAlgorithm, transformers=()):
    env = CountingEnv("counting", 3, 0)
    raw = env.time_step_spec()
    chain = TransformerChain([t(raw.observation, None) for t in transformers])
    algorithm = algorithm_cls(raw, env.action_spec(), None)
    from rlengine.plugin.manager import build_plugins

    plugins = build_plugins(load_entry_points=False)
    conv = Converters(plugins.registries.distributions)
    names = {"algorithm": "toy", **{i: t.__name__.lower() for i, t in enumerate(transformers)}}
    return prepare_specs(raw, env.action_spec(), chain, algorithm, conv, names), algorithm, chain


def test_specs_cover_time_step_action_experience_and_training_info():
    specs, _, _ = _prepare()
    assert specs.time_step.observation == tf.TensorSpec([2], tf.float32)
    assert specs.action.dtype == tf.int32 and specs.action.shape == []
    assert isinstance(specs.rollout_info["dist"], DistributionSpec)
    assert specs.experience.rollout_info == {"dist": {"logits": tf.TensorSpec([2], tf.float32)}}
    assert isinstance(specs.experience, Experience)
    assert specs.train_info == {"log_prob": tf.TensorSpec([], tf.float32), "reward": tf.TensorSpec([], tf.float32)}
    assert specs.loss.loss == tf.TensorSpec([], tf.float32)


def test_dummy_step_has_no_side_effects():
    specs, algorithm, chain = _prepare(transformers=[CountingTransformer])
    assert int(chain.transformers[0].updates) == 0
    assert int(algorithm.optimizer.iterations) == 0
    assert all(float(tf.reduce_sum(tf.abs(v))) == 0.0 for v in algorithm.trainable_variables)


class WrongAction(ToyAlgorithm):
    def rollout(self, time_step, state):
        step = super().rollout(time_step, state)
        return PolicyStep(tf.cast(step.action, tf.float32), state, step.info)


class WrongState(ToyAlgorithm):
    def rollout(self, time_step, state):
        step = super().rollout(time_step, state)
        return PolicyStep(step.action, (tf.zeros([2, 3]),), step.info)


@pytest.mark.parametrize("cls, what", [(WrongAction, "rollout\\(\\) action"), (WrongState, "rollout\\(\\) state")])
def test_spec_mismatch_names_the_plugin_and_both_structures(cls, what):
    with pytest.raises(SpecMismatchError, match=f"algorithm 'toy': {what}") as err:
        _prepare(cls)
    assert "expected" in str(err.value) and "got" in str(err.value)


class LyingTransformer(CountingTransformer):
    """Claims to keep the observation spec but returns int32."""

    def transform(self, observation, step_type, state):
        return tf.cast(observation, tf.int32), state


def test_transformer_mismatch_names_the_transformer():
    with pytest.raises(SpecMismatchError, match="transformer 'lyingtransformer': transform\\(\\) observation"):
        _prepare(transformers=[LyingTransformer])


def test_environment_whose_steps_disagree_with_its_spec_is_named(plugins, tmp_path):
    import numpy as np

    from rlengine import hookimpl
    from rlengine.run.engine import Engine
    from rlengine.testing import CountingEnv, testing_plugin, tiny_config

    class BadEnv(CountingEnv):
        def reset(self):
            ts = super().reset()
            return ts._replace(observation=ts.observation.astype(np.float64))

    class P:
        @hookimpl
        def rlengine_register_environments(self, register):
            register("bad", BadEnv)

    engine = Engine(tiny_config(str(tmp_path), env="bad"), extra_plugins=[("testing", testing_plugin()), ("bad", P())])
    with pytest.raises(SpecMismatchError, match="environment 'bad': reset\\(\\) time step does not match"):
        engine.train()
