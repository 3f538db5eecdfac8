"""A third-party algorithm's ``LossInfo.diagnostics`` reach the writers as ``diagnostics/<name>``, averaged over
the iteration's updates like the loss terms; a LossInfo built with two or three fields reports none."""

import pytest
import tensorflow as tf

from rlengine import hookimpl
from rlengine.api.data import LossInfo
from rlengine.errors import SpecMismatchError
from rlengine.run.engine import Engine
from rlengine.testing import MemoryWriter, testing_plugin, tiny_config
from rlengine.testing.kit import ToyAlgorithm, ToyQAlgorithm


def with_diagnostics(loss_info: LossInfo, rows) -> LossInfo:
    diagnostics = {"rows": tf.cast(tf.size(rows), tf.float32), "loss_again": loss_info.loss}
    return LossInfo(loss_info.loss, loss_info.extra, loss_info.priority, diagnostics)


class WatchedToy(ToyAlgorithm):
    """``toy`` reporting its minibatch size and its loss again as diagnostics."""

    # tiny_config's 2 copies x 4 steps = 8 rows: 2 minibatches of 4 rows x 2 epochs = 4 updates an iteration
    num_epochs = 2
    mini_batch_size = 4

    def train_complete(self, tape, info, weight=None):
        loss_info, grads_and_vars = super().train_complete(tape, info, weight)
        return with_diagnostics(loss_info, info["reward"]), grads_and_vars


class WatchedToyQ(ToyQAlgorithm):
    """``toy-q`` (8 sequences a sample, 4 updates an iteration) reporting the same from replay."""

    def train_complete(self, tape, info, weight=None):
        loss_info, grads_and_vars = super().train_complete(tape, info, weight)
        return with_diagnostics(loss_info, info["reward"]), grads_and_vars


class WatchedPlugin:
    @hookimpl
    def rlengine_register_algorithms(self, register):
        register("watched-toy", WatchedToy)
        register("watched-toy-q", WatchedToyQ)


def training_rows(tmp_path, algorithm):
    config = tiny_config(str(tmp_path / "run"), algorithm=algorithm, num_env_steps=48, eval_interval=0)
    Engine(config, extra_plugins=[("testing", testing_plugin()), ("watched", WatchedPlugin())]).train()
    rows = [row for row in MemoryWriter.last.rows if "loss/total" in row]
    assert rows
    return rows


@pytest.mark.parametrize("algorithm, rows_per_update", [("watched-toy", 4.0), ("watched-toy-q", 8.0)])
def test_diagnostics_reach_the_writers_averaged_over_the_updates(tmp_path, algorithm, rows_per_update):
    for row in training_rows(tmp_path, algorithm):
        assert row["diagnostics/rows"] == rows_per_update  # a mean over the updates, not a sum
        assert row["diagnostics/loss_again"] == pytest.approx(row["loss/total"], rel=1e-5, abs=1e-7)
        assert not {"loss/rows", "loss/loss_again"} & set(row)


@pytest.mark.parametrize("algorithm", ["toy", "toy-q"])  # LossInfo(loss, extra) and LossInfo(loss, extra, priority=)
def test_a_loss_info_without_diagnostics_reports_only_losses(tmp_path, algorithm):
    for row in training_rows(tmp_path, algorithm):
        assert not [key for key in row if key.startswith("diagnostics/")]
        assert "loss/total" in row


class ChangingToy(ToyAlgorithm):
    """``toy`` whose traced update reports a diagnostic its eager spec-preparation step did not."""

    def train_complete(self, tape, info, weight=None):
        loss_info, grads_and_vars = super().train_complete(tape, info, weight)
        extra = {"late": loss_info.loss} if tf.inside_function() else {}
        return LossInfo(loss_info.loss, loss_info.extra, loss_info.priority, extra), grads_and_vars


class ChangingPlugin:
    @hookimpl
    def rlengine_register_algorithms(self, register):
        register("changing-toy", ChangingToy)


def test_a_loss_info_unlike_the_prepared_one_is_named_not_misfiled(tmp_path):
    config = tiny_config(str(tmp_path / "run"), algorithm="changing-toy", num_env_steps=48, eval_interval=0)
    with pytest.raises(SpecMismatchError) as info:
        Engine(config, extra_plugins=[("testing", testing_plugin()), ("changing", ChangingPlugin())]).train()
    message = str(info.value)
    assert "\n" not in message and "ChangingToy" in message and "diagnostics/late" in message
