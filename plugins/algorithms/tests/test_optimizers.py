"""FusedAdam: Keras's Adam, one fused op per dense update, the same numbers and the same checkpoints."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras
from rlengine_algorithms.optimizers import FusedAdam


def make_problem():
    tf.random.set_seed(0)
    return [tf.Variable(tf.random.normal([5, 3]), name="w"), tf.Variable(tf.zeros([3]), name="b"),
            tf.Variable(tf.random.normal([10, 5]), name="embedding")]


def train(optimizer_class, graph: bool, steps: int = 30) -> tuple:
    variables = make_problem()
    schedule = tf_keras.optimizers.schedules.PolynomialDecay(3e-3, 50, 1e-4)  # lr read at each update
    optimizer = optimizer_class(schedule, epsilon=1e-5)

    def step(x, ids):
        with tf.GradientTape() as tape:
            rows = tf.gather(variables[2], ids)  # a sparse gradient (IndexedSlices) for the embedding
            loss = tf.reduce_sum(tf.tanh(x @ variables[0] + variables[1]) ** 2) + tf.reduce_sum(rows ** 2)
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))

    step = tf.function(step, autograph=False) if graph else step
    for i in range(steps):
        step(tf.random.stateless_normal([4, 5], [i, 1]), tf.constant([i % 10, (3 * i) % 10]))
    return variables, optimizer


@pytest.mark.parametrize("graph", [False, True], ids=["eager", "graph"])
def test_fused_adam_follows_keras_adam(graph):
    keras_vars, keras_opt = train(tf_keras.optimizers.Adam, graph)
    fused_vars, fused_opt = train(FusedAdam, graph)
    for a, b in zip(keras_vars + keras_opt.variables, fused_vars + fused_opt.variables):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6, err_msg=a.name)
    assert int(fused_opt.iterations) == 30
    assert float(np.abs(fused_vars[0].numpy() - make_problem()[0].numpy()).max()) > 1e-3  # it did train


def test_each_dense_update_is_one_fused_op():
    variables = make_problem()[:2]
    optimizer = FusedAdam(1e-3, jit_compile=False)  # with a GPU, Keras would otherwise compile each update
    optimizer.build(variables)

    @tf.function(autograph=False)
    def step():
        optimizer.apply_gradients([(tf.ones_like(v), v) for v in variables])

    ops = [op.type for op in step.get_concrete_function().graph.get_operations()]
    assert ops.count("ResourceApplyAdam") == 2
    assert ops.count("Pow") == 2  # the bias corrections, made once for both variables


def test_checkpoints_of_keras_adam_restore_into_fused_adam_and_back(tmp_path):
    keras_vars, keras_opt = train(tf_keras.optimizers.Adam, graph=True, steps=5)
    path = tf.train.Checkpoint(variables=keras_vars, optimizer=keras_opt).write(str(tmp_path / "keras"))

    fused_vars = make_problem()
    fused_opt = FusedAdam(tf_keras.optimizers.schedules.PolynomialDecay(3e-3, 50, 1e-4), epsilon=1e-5)
    fused_opt.build(fused_vars)
    tf.train.Checkpoint(variables=fused_vars, optimizer=fused_opt).read(path).assert_consumed()
    for a, b in zip(keras_opt.variables, fused_opt.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())

    back = tf.train.Checkpoint(variables=fused_vars, optimizer=fused_opt).write(str(tmp_path / "fused"))
    again_vars = make_problem()
    again = tf_keras.optimizers.Adam(tf_keras.optimizers.schedules.PolynomialDecay(3e-3, 50, 1e-4), epsilon=1e-5)
    again.build(again_vars)
    tf.train.Checkpoint(variables=again_vars, optimizer=again).read(back).assert_consumed()
    for a, b in zip(fused_opt.variables, again.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
