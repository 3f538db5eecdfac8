"""The network plugin kind: encoders registered by a plugin, built by algorithms through the run's scope."""

from __future__ import annotations

import attrs
import pytest
import tensorflow as tf

from rlengine import ConfigError, Encoder, hookimpl
from rlengine.api.network import Encoders, action_mask_of, encoders_in_scope, without_action_mask
from rlengine.errors import PluginError, RegistryError
from rlengine.plugin.manager import build_plugins
from rlengine.run.engine import Engine
from rlengine.testing import ToyAlgorithm, testing_plugin, tiny_config


@attrs.define
class ScaleConfig:
    width: int = 3


class ScaleEncoder(Encoder):
    """``[B, 2] -> [B, width]``: one matrix, made in ``__init__`` from the spec."""

    config_class = ScaleConfig
    calls = 0

    def __init__(self, observation_spec, config, name="encoder"):
        super().__init__(observation_spec, config, name)
        self.matrix = tf.Variable(tf.ones([int(observation_spec.shape[-1]), config.width]), name="scale_matrix")
        self.output_size = config.width

    def __call__(self, observation):
        type(self).calls += 1  # counts traces (and eager calls)
        return tf.matmul(tf.cast(observation, tf.float32), self.matrix)


class NoWidthEncoder(Encoder):
    def __call__(self, observation):
        return observation


class WrongWidthEncoder(ScaleEncoder):
    """Declares one more feature than it returns."""

    def __init__(self, observation_spec, config, name="encoder"):
        super().__init__(observation_spec, config, name)
        self.output_size = config.width + 1


class LazyEncoder(Encoder):
    """Makes its weights on first call, as a Keras layer would."""

    def __init__(self, observation_spec, config, name="encoder"):
        super().__init__(observation_spec, config, name)
        self.output_size, self.matrix = 3, None

    def __call__(self, observation):
        if self.matrix is None:
            self.matrix = tf.Variable(tf.ones([int(observation.shape[-1]), 3]))
        return tf.matmul(tf.cast(observation, tf.float32), self.matrix)


@attrs.define
class EncodedToyConfig:
    encoder: str = "scale"


class EncodedToy(ToyAlgorithm):
    """The kit's toy policy, reading its observation through the encoder its config names."""

    config_class = EncodedToyConfig

    def __init__(self, time_step_spec, action_spec, config):
        super().__init__(time_step_spec, action_spec, config)
        self.encoder = self.make_encoder(config.encoder)
        self.target = self.copy_encoder(self.encoder, "target_encoder")

    def _dist(self, observation):
        return super()._dist(self.encoder(observation))


class NetworksPlugin:
    algorithm = None

    @hookimpl
    def rlengine_train_start(self, run):
        self.algorithm = run.algorithm

    @hookimpl
    def rlengine_register_networks(self, register):
        register("scale", ScaleEncoder)
        register("no-width", NoWidthEncoder)
        register("wrong-width", WrongWidthEncoder)
        register("lazy", LazyEncoder)

    @hookimpl
    def rlengine_register_algorithms(self, register):
        register("encoded-toy", EncodedToy)


def _engine(tmp_path, plugin=None, **sections):
    raw = tiny_config(str(tmp_path), algorithm="encoded-toy", writers=[])
    raw.update(sections)
    return Engine(raw, extra_plugins=[("testing", testing_plugin()), ("networks", plugin or NetworksPlugin())])


def test_register_networks_hook_an_encoder_is_built_with_its_section_and_trains(tmp_path):
    ScaleEncoder.calls = 0
    plugin = NetworksPlugin()
    result = _engine(tmp_path, plugin, scale={"width": 5}).train()
    assert result.env_steps == 32
    assert ScaleEncoder.calls > 0
    assert plugin.algorithm.encoder.output_size == 5
    trained = [v.name for v in plugin.algorithm.trainable_variables]
    assert trained.count("scale_matrix:0") == 1  # the encoder's, not its target copy's


def test_the_encoder_target_copy_has_equal_values_and_is_not_trained():
    spec = tf.TensorSpec([2], tf.float32)
    encoders = Encoders(lambda name: (ScaleEncoder, ScaleConfig(width=4)))
    source = encoders.make("scale", spec)
    source.matrix.assign(tf.fill([2, 4], 7.0))
    target = encoders.copy(source, "target")
    assert target.trainable_variables == ()
    assert [v.numpy().tolist() for v in target.variables] == [v.numpy().tolist() for v in source.variables]
    assert target.registered_name == "scale"


def test_an_unknown_encoder_is_one_line_naming_close_matches(tmp_path):
    with pytest.raises(RegistryError) as info:
        _engine(tmp_path, **{"encoded-toy": {"encoder": "scael"}}).train()
    message = str(info.value)
    assert "\n" not in message and "unknown network 'scael'" in message and "scale" in message


def test_an_encoder_without_an_output_size_names_itself(tmp_path):
    with pytest.raises(PluginError, match="encoder 'no-width' .* set no positive output_size"):
        _engine(tmp_path, **{"encoded-toy": {"encoder": "no-width"}}).train()


def test_an_encoder_whose_features_are_not_its_declared_width_names_its_plugin_and_the_rule(tmp_path):
    with pytest.raises(PluginError) as info:
        _engine(tmp_path, **{"encoded-toy": {"encoder": "wrong-width"}}).train()
    message = str(info.value)
    assert "\n" not in message
    assert "encoder 'wrong-width'" in message and "plugin 'networks'" in message
    assert "returned float32 [2, 3]" in message and "declares float32 [2, 4]" in message


def test_an_encoder_that_makes_its_weights_on_first_call_names_its_plugin_and_the_rule(tmp_path):
    with pytest.raises(PluginError, match="encoder 'lazy' .*plugin 'networks'.* made 1 variable\\(s\\) on its first "
                                          "call; make every variable in __init__"):
        _engine(tmp_path, **{"encoded-toy": {"encoder": "lazy"}}).train()


def test_an_encoder_option_is_validated_as_a_section(tmp_path):
    with pytest.raises(ConfigError, match="scale"):
        _engine(tmp_path, scale={"widht": 5}).train()


def test_make_encoder_outside_a_run_says_where_encoders_come_from():
    from rlengine.api.data import TimeStep

    spec = tf.TensorSpec([2], tf.float32)
    time_step_spec = TimeStep(spec, spec, spec, spec, spec, spec)
    with pytest.raises(RuntimeError, match="encoders are made while the core builds the algorithm"):
        EncodedToy(time_step_spec, tf.TensorSpec([], tf.int32), EncodedToyConfig())
    with encoders_in_scope(Encoders(lambda name: (ScaleEncoder, ScaleConfig()))):
        assert EncodedToy(time_step_spec, tf.TensorSpec([], tf.int32), EncodedToyConfig()).encoder.output_size == 3


def test_the_action_mask_leaf_is_kept_from_encoders():
    observation = {"action_mask": [1, 0], "image": 1}
    assert without_action_mask(observation) == {"image": 1}
    assert action_mask_of(observation) == [1, 0]
    assert action_mask_of({"image": 1}) is None and without_action_mask([1, 2]) == [1, 2]


def test_networks_are_a_listed_kind():
    plugins = build_plugins(load_entry_points=False, extra_plugins=[("networks", NetworksPlugin())])
    assert plugins.registries.networks.names() == ["lazy", "no-width", "scale", "wrong-width"]
