"""Adam with each dense update done by TensorFlow's fused kernel.

Keras's Adam builds about 25 ops per variable and per update (casts, powers,
the two moment updates, the step); a PPO update of a two-layer actor-critic
has 12 variables, so the optimizer was a quarter of the update's tracing
time and a share of every update. ``ResourceApplyAdam`` computes the same
formula in one op::

    m += (g - m) * (1 - beta_1)
    v += (g * g - v) * (1 - beta_2)
    variable -= lr * sqrt(1 - beta_2 ** t) / (1 - beta_1 ** t) * m / (sqrt(v) + epsilon)

:class:`FusedAdam` keeps Keras's slots, their names and the iteration
counter, so checkpoints written with ``tf_keras.optimizers.Adam`` restore
into it and the other way round. Sparse gradients, ``amsgrad`` and adaptive
epsilon keep Keras's own update.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf
import tf_keras


class FusedAdam(tf_keras.optimizers.Adam):
    """``tf_keras.optimizers.Adam`` whose dense updates are one ``ResourceApplyAdam`` op per variable."""

    def apply_gradients(self, grads_and_vars: Any, *args: Any, **kwargs: Any) -> Any:
        self._scalars_of_step = _StepScalars()  # lr and the bias corrections, made once per update and graph
        try:
            return super().apply_gradients(grads_and_vars, *args, **kwargs)
        finally:
            self._scalars_of_step = None  # no graph tensor outlives its update

    def update_step(self, gradient: Any, variable: Any) -> None:
        if isinstance(gradient, tf.IndexedSlices) or self.amsgrad or getattr(self, "adaptive_epsilon", False) \
                or not hasattr(variable, "handle"):
            super().update_step(gradient, variable)
            return
        index = self._index_dict[self._var_key(variable)]
        lr, beta_1, beta_2, beta_1_power, beta_2_power, epsilon = self._step_scalars(variable.dtype)
        tf.raw_ops.ResourceApplyAdam(
            var=variable.handle, m=self._momentums[index].handle, v=self._velocities[index].handle,
            beta1_power=beta_1_power, beta2_power=beta_2_power, lr=lr, beta1=beta_1, beta2=beta_2,
            epsilon=epsilon, grad=gradient)

    def _step_scalars(self, dtype: tf.DType) -> tuple:
        """The update's scalars, as Keras computes them, shared by the variables of one graph."""
        by_graph = (getattr(self, "_scalars_of_step", None) or _StepScalars()).by_graph
        key = (tf.compat.v1.get_default_graph(), dtype)
        if key not in by_graph:
            local_step = tf.cast(self.iterations + 1, dtype)
            beta_1, beta_2 = tf.cast(self.beta_1, dtype), tf.cast(self.beta_2, dtype)
            by_graph[key] = (tf.cast(self.learning_rate, dtype), beta_1, beta_2, tf.pow(beta_1, local_step),
                             tf.pow(beta_2, local_step), tf.cast(self.epsilon, dtype))
        return by_graph[key]


class _StepScalars:
    """The scalars of one ``apply_gradients`` by (graph, dtype); a plain object, so Keras does not track it."""

    def __init__(self) -> None:
        self.by_graph: dict = {}
