"""A non-finite update of a prioritized off-policy run is skipped by the NaN guard, and its
non-finite priorities are not written into the sum tree (where they would stop the run with
TensorFlow's assertion, long before the guard could name the culprit)."""

import numpy as np
import tensorflow as tf

from rlengine import hookimpl
from rlengine.api.data import LossInfo
from rlengine.errors import NonFiniteError
from rlengine.run.engine import Engine
from rlengine.testing import MemoryWriter, testing_plugin, tiny_config
from rlengine.testing.kit import ToyQAlgorithm


class NaNPriorityQ(ToyQAlgorithm):
    """``toy-q`` on prioritized replay whose loss and priorities are NaN in the first half of the run."""

    prioritized_replay = True

    def train_complete(self, tape, info, weight=None):
        loss_info, grads_and_vars = super().train_complete(tape, info, weight)
        nan = tf.where(self.progress < 0.5, tf.constant(np.nan, tf.float32), 0.0)
        return LossInfo(loss_info.loss + nan, loss_info.extra, priority=loss_info.priority + nan), grads_and_vars


class NaNPriorityPlugin:
    @hookimpl
    def rlengine_register_algorithms(self, register):
        register("nan-priority-q", NaNPriorityQ)


def engine(tmp_path, **train):
    config = tiny_config(str(tmp_path / "run"), algorithm="nan-priority-q", num_env_steps=64, eval_interval=0,
                         **train)
    return Engine(config, extra_plugins=[("testing", testing_plugin()), ("nan-priority", NaNPriorityPlugin())])


def test_nonfinite_priorities_are_skipped_with_their_update_and_the_run_goes_on(tmp_path):
    result = engine(tmp_path, max_nonfinite_updates=1000).train()
    assert result.env_steps == 64
    rows = MemoryWriter.last.rows
    assert rows[-1]["train/skipped_updates"] > 0  # the poisoned half's updates were skipped ...
    assert np.isfinite(rows[-1]["loss/total"])  # ... and the clean half trained


def test_a_streak_of_nonfinite_prioritized_updates_is_stopped_by_the_guard(tmp_path):
    try:
        engine(tmp_path, max_nonfinite_updates=3).train()
    except NonFiniteError as error:
        assert "updates in a row skipped because the total loss was not finite" in str(error)
    else:
        raise AssertionError("the NaN guard did not stop the run")
