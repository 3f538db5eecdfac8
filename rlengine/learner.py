"""The learner: turns collected experience into gradient updates.

One :meth:`Learner.train` call is one ``tf.function`` call::

    batch = algorithm.preprocess_experience(experience)        # [T, B]
    for epoch in range(algorithm.num_epochs):
        for minibatch in shuffled(batch, algorithm.mini_batch_size):
            with GradientTape() as tape:
                info = train_step over the minibatch           # see below
            loss, grads = algorithm.train_complete(tape, info)
            apply unless a gradient or the loss is not finite

Stateless algorithms see the minibatch as one flat batch of rows; recurrent
ones (``needs_time_dimension``) get whole sequences and ``train_step`` runs
in a ``tf.while_loop`` over time, resetting the state where a step is FIRST.
Epochs and minibatches are graph loops, so tracing cost does not grow with
their number.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from rlengine.data import Experience, Nest
from rlengine.distributions import Converters, params_spec
from rlengine.driver import reset_where_first
from rlengine.interfaces import Algorithm
from rlengine.specs import RunSpecs


def all_finite(tensors: list) -> Any:
    checks = [tf.reduce_all(tf.math.is_finite(t)) for t in tensors if t is not None]
    return tf.reduce_all(tf.stack(checks)) if checks else tf.constant(True)


class Learner:
    """Runs the updates of one algorithm on batches of experience."""

    def __init__(self, algorithm: Algorithm, specs: RunSpecs, converters: Converters):
        self.algorithm = algorithm
        self.specs = specs
        self.converters = converters
        self.skipped_updates = tf.Variable(0, dtype=tf.int64, trainable=False, name="skipped_updates")
        # autograph=False: explicit loops; see SyncDriver.
        self.train = tf.function(self._train, autograph=False)

    def _train(self, experience: Experience) -> dict:
        """Preprocess ``[T, B]`` experience and run every epoch of minibatch updates."""
        exp = experience._replace(
            rollout_info=self.converters.from_params(experience.rollout_info, self.specs.rollout_info))
        batch = self.algorithm.preprocess_experience(exp)
        spec = self.converters.spec_of(batch, outer_dims=2)
        flat = tf.nest.flatten(self.converters.to_params(batch))
        recurrent = self.algorithm.needs_time_dimension
        if not recurrent:  # rows are independent: one flat batch [T * B]
            flat = [tf.reshape(t, [-1, *t.shape[2:]]) for t in flat]
        else:  # sequences are kept whole; minibatches pick copies: [B, T]
            flat = [tf.transpose(t, [1, 0, *range(2, len(t.shape))]) for t in flat]
        num_rows = tf.shape(flat[0])[0]
        size = self.algorithm.mini_batch_size or num_rows
        num_minibatches = tf.maximum(num_rows // size, 1)
        totals = tf.nest.map_structure(lambda s: tf.zeros(s.shape, s.dtype), self.specs.loss)

        def minibatch(i, order, totals):
            rows = order[i * size:(i + 1) * size]
            loss = self._update([tf.gather(t, rows) for t in flat], spec, recurrent)
            return i + 1, order, tf.nest.map_structure(tf.add, totals, loss)

        def epoch(e, totals):
            order = tf.random.shuffle(tf.range(num_rows))
            _, _, totals = tf.while_loop(lambda i, *_: i < num_minibatches, minibatch,
                                         (tf.constant(0), order, totals), parallel_iterations=1)
            return e + 1, totals

        _, totals = tf.while_loop(lambda e, _: e < self.algorithm.num_epochs, epoch,
                                  (tf.constant(0), totals), parallel_iterations=1)
        count = tf.cast(self.algorithm.num_epochs * num_minibatches, tf.float32)
        return {k: v / count for k, v in _flatten_loss(totals).items()}

    def _update(self, picked: list, spec: Nest, recurrent: bool) -> Nest:
        params = tf.nest.pack_sequence_as(params_spec(spec), picked)
        with tf.GradientTape() as tape:
            if recurrent:
                info = self._train_over_time(params, spec)
            else:
                minibatch = self.converters.from_params(params, spec)
                info = self.algorithm.train_step(minibatch, ()).info
        loss_info, grads_and_vars = self.algorithm.train_complete(tape, info)
        grads = [g for g, _ in grads_and_vars]
        ok = tf.logical_and(all_finite(grads), all_finite([loss_info.loss]))

        def apply():
            self.algorithm.apply_gradients(grads_and_vars)
            self.algorithm.after_update()
            return tf.constant(0, tf.int64)

        skipped = tf.cond(ok, apply, lambda: tf.constant(1, tf.int64))
        self.skipped_updates.assign_add(skipped)
        return loss_info

    def _train_over_time(self, params: Nest, spec: Nest) -> Nest:
        """``train_step`` over ``[b, T]`` sequences in a while loop; infos stacked ``[T, b]``."""
        time_major = tf.nest.map_structure(lambda t: tf.transpose(t, [1, 0, *range(2, len(t.shape))]), params)
        length = tf.shape(tf.nest.flatten(time_major)[0])[0]
        batch = tf.shape(tf.nest.flatten(time_major)[0])[1]
        info_spec = self.specs.train_info
        flat_info_spec = tf.nest.flatten(params_spec(info_spec))
        arrays = [tf.TensorArray(s.dtype, size=length, element_shape=[None, *s.shape]) for s in flat_info_spec]
        initial = self.algorithm.initial_state(batch)

        def step(t, state, arrays):
            step_params = tf.nest.map_structure(lambda x: x[t], time_major)
            exp = self.converters.from_params(step_params, spec)
            state = reset_where_first(exp.step_type, state, initial)
            out = self.algorithm.train_step(exp, state)
            flat_info = tf.nest.flatten(self.converters.to_params(out.info))
            return t + 1, out.state, [a.write(t, x) for a, x in zip(arrays, flat_info)]

        _, _, arrays = tf.while_loop(lambda t, *_: t < length, step,
                                     (tf.constant(0), _first_state(time_major, initial), arrays),
                                     parallel_iterations=1)
        stacked = tf.nest.pack_sequence_as(params_spec(info_spec), [a.stack() for a in arrays])
        return self.converters.from_params(stacked, info_spec)


def _first_state(time_major: Experience, initial: Nest) -> Nest:
    """The stored rollout state of the first row when there is one, else zeros."""
    stored = time_major.state
    if tf.nest.flatten(stored):
        return tf.nest.map_structure(lambda s: s[0], stored)
    return initial


def _flatten_loss(loss: Nest) -> dict:
    out = {"loss/total": loss.loss}
    out.update({f"loss/{k}": v for k, v in loss.extra.items()})
    return out

