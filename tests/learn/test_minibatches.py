"""On-policy minibatches: how a batch of rows is cut, and a static shape whenever the unroll fixes the row count."""

import pytest
import tensorflow as tf

import rlengine
from rlengine import PolicyStep, hookimpl
from rlengine.learn.minibatches import minibatch_layout, minibatch_picker
from rlengine.run.engine import Engine
from rlengine.testing import MemoryWriter, testing_plugin, tiny_config
from rlengine.testing.kit import ToyAlgorithm


@pytest.mark.parametrize("rows, mini_batch_size, expected", [
    (256, 256, (256, 256, 1)),
    (256, 64, (256, 64, 4)),
    (100, 64, (100, 64, 1)),  # the 36 rows past the last whole minibatch are left out
    (10, 64, (10, 10, 1)),  # a minibatch larger than the batch is the whole batch
    (8, 0, (8, 8, 1)),  # 0: the whole batch in one update
    (0, 64, (0, 1, 1)),  # no rows: one empty minibatch, as with an unknown row count
])
def test_a_static_row_count_gives_python_ints(rows, mini_batch_size, expected):
    assert minibatch_layout(tf.zeros([rows, 3]), mini_batch_size) == expected


@pytest.mark.parametrize("rows, mini_batch_size, expected", [(256, 64, (256, 64, 4)), (10, 64, (10, 64, 1)),
                                                             (0, 0, (0, 1, 1))])  # no rows: one empty minibatch
def test_an_unknown_row_count_gives_tensors_with_the_same_layout(rows, mini_batch_size, expected):
    seen = []

    @tf.function(input_signature=[tf.TensorSpec([None, 3])])
    def layout(batch):
        num_rows, size, count = minibatch_layout(batch, mini_batch_size)
        seen.append(all(isinstance(x, tf.Tensor) for x in (num_rows, count)))
        return num_rows, size, count

    # with more rows asked for than there are, the slice of the shuffled order stops at the last row
    assert tuple(int(x) for x in layout(tf.zeros([rows, 3]))) == expected
    assert seen == [True]


class ShapeWatchingToy(ToyAlgorithm):
    """``toy`` cutting tiny_config's 2 copies x 4 steps = 8 rows into minibatches of 3 (2 an epoch, 2 rows
    left out), and keeping the row shape each traced ``train_step`` saw."""

    num_epochs = 2
    mini_batch_size = 3
    traced_shapes: list = []

    def train_step(self, exp, state):
        ShapeWatchingToy.traced_shapes.append(exp.reward.shape.as_list())
        return super().train_step(exp, state)

    def train_complete(self, tape, info, weight=None):
        loss_info, grads_and_vars = super().train_complete(tape, info, weight)
        rows = tf.cast(tf.size(info["reward"]), tf.float32)
        return loss_info._replace(diagnostics={"rows": rows}), grads_and_vars


class UnknownRowsToy(ShapeWatchingToy):
    """Keeps the time steps whose rewards are not negative (all of them): a row count known only when it
    runs, 8 rows against minibatches of 64."""

    mini_batch_size = 64
    num_epochs = 1

    def preprocess_experience(self, exp):
        rows = super(ShapeWatchingToy, self).preprocess_experience(exp)  # [T, B]
        kept = tf.reduce_all(rows.rollout_info >= 0, axis=1)
        return tf.nest.map_structure(lambda t: tf.boolean_mask(t, kept), rows)


class ToysPlugin:
    """Registers every toy of this module."""

    @hookimpl
    def rlengine_register_algorithms(self, register):
        for name, toy in [("shape-watching-toy", ShapeWatchingToy), ("unknown-rows-toy", UnknownRowsToy),
                          ("row-order-toy", RowOrderToy), ("halves-toy", HalvesToy)]:
            register(name, toy)


def rows_per_update(tmp_path, algorithm: str) -> tuple:
    """``(the row shape of the last traced train_step, each written row's diagnostics/rows)``."""
    ShapeWatchingToy.traced_shapes = []
    config = tiny_config(str(tmp_path / "run"), algorithm=algorithm, num_env_steps=48, eval_interval=0)
    Engine(config, extra_plugins=[("testing", testing_plugin()), ("toys", ToysPlugin())]).train()
    rows = [row["diagnostics/rows"] for row in MemoryWriter.last.rows if "loss/total" in row]
    assert rows
    return ShapeWatchingToy.traced_shapes[-1], set(rows)


def test_each_minibatch_has_a_static_shape_when_the_unroll_fixes_the_rows(tmp_path):
    # the spec preparation's dummy step sees [2] rows; the learner's traced update, every minibatch: [3]
    assert rows_per_update(tmp_path, "shape-watching-toy") == ([3], {3.0})


def test_a_minibatch_larger_than_a_batch_of_unknown_rows_is_the_whole_batch(tmp_path):
    assert rows_per_update(tmp_path, "unknown-rows-toy") == ([None], {8.0})  # not claimed to be 64


class RowOrderToy(ToyAlgorithm):
    """``toy`` that numbers tiny_config's 8 rows (2 copies x 4 steps) in the order collected and reports
    whether each update saw them in that order."""

    num_epochs = 3
    mini_batch_size = 8

    def preprocess_experience(self, exp):
        rows = super().preprocess_experience(exp)  # [T, B]
        index = tf.reshape(tf.range(tf.size(rows.rollout_info), dtype=tf.float32), tf.shape(rows.rollout_info))
        return rows._replace(rollout_info={"reward": rows.rollout_info, "index": index})

    def train_step(self, exp, state):
        dist = self._dist(exp.observation)
        return PolicyStep((), state, {"log_prob": dist.log_prob(exp.action), "reward": exp.rollout_info["reward"],
                                      "index": exp.rollout_info["index"]})

    def train_complete(self, tape, info, weight=None):
        loss_info, grads_and_vars = super().train_complete(tape, info, weight)
        index = info["index"]
        in_order = tf.reduce_all(index[1:] - index[:-1] == 1)  # consecutive, as collected
        return loss_info._replace(diagnostics={"in_order": tf.cast(in_order, tf.float32)}), grads_and_vars


class HalvesToy(RowOrderToy):
    mini_batch_size = 4  # two minibatches an epoch: shuffled


def in_order_per_iteration(tmp_path, algorithm: str) -> list:
    config = tiny_config(str(tmp_path / algorithm), algorithm=algorithm, num_env_steps=48, eval_interval=0)
    Engine(config, extra_plugins=[("testing", testing_plugin()), ("toys", ToysPlugin())]).train()
    return [row["diagnostics/in_order"] for row in MemoryWriter.last.rows if "loss/total" in row]


def test_a_minibatch_of_every_row_keeps_the_order_collected(tmp_path):
    # shuffling changes nothing but the order its rows are summed in, so it is left out
    assert set(in_order_per_iteration(tmp_path, "row-order-toy")) == {1.0}


def test_smaller_minibatches_are_shuffled(tmp_path):
    seen = in_order_per_iteration(tmp_path, "halves-toy")
    assert seen and min(seen) < 1.0


def test_orders_are_independent_permutations_drawn_from_the_run_seed():
    def draw(run_seed):
        rlengine.random.reset(run_seed)
        return rlengine.random.orders(4, 6).numpy()

    orders = draw(3)
    assert orders.shape == (4, 6)
    assert all(sorted(row) == list(range(6)) for row in orders)
    assert len({tuple(row) for row in orders}) > 1  # not one order repeated
    assert (draw(3) == orders).all() and not (draw(4) == orders).all()


def test_the_picker_gives_each_epoch_its_own_order_and_whole_minibatches():
    rlengine.random.reset(0)
    flat = [tf.range(8) * 10]  # 8 rows, minibatches of 3: 2 an epoch, 2 rows sit out
    pick = minibatch_picker(flat, 3, 8, 3, 2)
    epochs = []
    for epoch in range(3):
        first, second = (pick(tf.constant(2 * epoch + i))[0] for i in range(2))
        assert first.shape == second.shape == [3]
        assert not set(first.numpy()) & set(second.numpy())  # an epoch's minibatches do not overlap
        epochs.append(tuple(first.numpy()) + tuple(second.numpy()))
    assert len(set(epochs)) == 3  # each epoch its own order
    assert minibatch_picker(flat, 3, 8, 8, 1)(tf.constant(0)) is flat  # one minibatch of every row: as collected
