"""``--force`` onto a run of another network: one line of ours, no list of TensorFlow's unrestored values.

A restore that fails never hands back the status whose ``expect_partial()``
would silence TensorFlow's leftovers, which TensorFlow then prints when the
restore is collected: "Detecting that an object ... is being deleted with
unrestored values" and one "Value in checkpoint could not be found" per
variable (issue 50: 13 of them after our line).
"""

import gc
import logging

import attrs
import pytest
import tensorflow as tf
import tf_keras

from rlengine import hookimpl
from rlengine.errors import CheckpointMismatchError
from rlengine.run.engine import Engine
from rlengine.testing import ToyAlgorithm, testing_plugin, tiny_config

TENSORFLOW_LEFTOVERS = ("unrestored values", "could not be found in the restored object",
                        "could not be found in the checkpoint")


@attrs.define
class WideConfig:
    widths: list = [4, 3]


class WideToy(ToyAlgorithm):
    """``toy`` with a hidden layer of each of ``wide.widths`` units, trained by Adam: fewer layers leave
    values of the checkpoint (layers, Adam's slots) that the new network has no place for."""

    config_class = WideConfig

    def __init__(self, time_step_spec, action_spec, config):
        super().__init__(time_step_spec, action_spec, config)
        self.hidden = [tf_keras.layers.Dense(width) for width in config.widths]
        self.optimizer = tf_keras.optimizers.Adam(0.01)

    def _dist(self, observation):
        features = tf.cast(observation, tf.float32)
        for layer in self.hidden:
            features = layer(features)
        return super()._dist(features)


class WidePlugin:
    @hookimpl
    def rlengine_register_algorithms(self, register):
        register("wide", WideToy)


def _engine(root, widths):
    raw = {**tiny_config(str(root), algorithm="wide", checkpoint_interval=2), "wide": {"widths": widths}}
    return Engine(raw, extra_plugins=[("testing", testing_plugin()), ("wide", WidePlugin())], force=True)


class Said(logging.Handler):
    """What TensorFlow's Python logger says (its own handler writes to the sys.stderr of its import)."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def test_force_onto_another_network_says_one_line_and_tensorflow_nothing(tmp_path, capfd):
    root = tmp_path / "run"
    _engine(root, [4, 3]).train()
    capfd.readouterr()
    said, tensorflow_logger = Said(), logging.getLogger("tensorflow")
    tensorflow_logger.addHandler(said)

    with pytest.raises(CheckpointMismatchError) as info:  # one layer fewer: its checkpoint does not fit
        _engine(root, [4]).train()
    message = str(info.value)
    del info  # the traceback holds the failed restore; collected now, TensorFlow would speak now
    gc.collect()
    tensorflow_logger.removeHandler(said)

    assert "another algorithm or network shape" in message and "\n" not in message
    lines = capfd.readouterr().err.splitlines() + said.lines
    assert not [line for line in lines if any(words in line for words in TENSORFLOW_LEFTOVERS)], lines
