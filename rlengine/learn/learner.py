"""The learner: turns experience into gradient updates, on-policy or from replay.

On-policy, one :meth:`Learner.train` call (one ``tf.function`` call) runs::

    batch = algorithm.preprocess_experience(experience)        # [T + 1, B] -> [T, B]
    for epoch in range(algorithm.num_epochs):                   # one graph loop over both
        for minibatch in shuffled(batch, algorithm.mini_batch_size):  # unshuffled when one holds every row
            update(minibatch)

Off-policy, pipelines store each unroll with :meth:`Learner.store` (rows in time order into the
buffer), and one :meth:`Learner.train_from_replay` call runs::

    for _ in range(num_updates):  # the pipeline's: num_updates_per_iteration, or one per env step when 0
        sequences, indices, weights = buffer.sample(mini_batch_size)   # [B, L]
        batch = algorithm.preprocess_experience(time_major(sequences))  # e.g. transitions
        loss = update(batch, weights)
        buffer.update_priorities(indices, loss.priority)               # prioritized only, when finite

``update`` records ``train_step`` under one persistent tape and lets
``train_complete`` turn it into the loss and gradients, which are applied
unless one is not finite. Stateless algorithms see rows (``[T * B]``
on-policy, whatever ``preprocess_experience`` returns from replay);
recurrent ones (``needs_time_dimension``) see whole sequences, and
``train_step`` runs in a ``tf.while_loop`` over time, resetting the state
where a step is FIRST. All loops are graph loops, so tracing cost does not
grow with their number.

Both calls return the averages over their updates of every ``LossInfo``
scalar (summed in the loops by :class:`~rlengine.learn.loss_totals.LossTotals`): ``loss/total``,
``loss/<name>`` of each ``extra`` term and ``diagnostics/<name>`` of each
diagnostic; and ``train/skipped_updates``, the run's count of updates the NaN
guard (:mod:`rlengine.learn.nonfinite`) skipped. With ``train.normalize_reward`` the learner's
:class:`~rlengine.learn.reward_scale.RewardScale` observes each unroll (on-policy, in ``train``;
from replay, in ``store``) and scales the rewards of what is trained on, never what is stored or
reported; then ``diagnostics/reward_scale`` is the divisor.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import tensorflow as tf

from rlengine.api import Algorithm
from rlengine.api.data import Experience, LossInfo, Nest
from rlengine.api.placement import on_device
from rlengine.api.specs import RunSpecs
from rlengine.collect.converters import Converters, params_spec
from rlengine.collect.fixed_signature import FixedSignatureFunction
from rlengine.collect.policy_step import reset_where_first
from rlengine.errors import NonFiniteError
from rlengine.learn.loss_totals import LossTotals
from rlengine.learn.minibatches import minibatch_layout, minibatch_picker, swap_leading
from rlengine.learn.nonfinite import FiniteCheck, all_finite
from rlengine.learn.replay.buffer import kept_in_replay, rows_to_store
from rlengine.learn.replicas import Replicas
from rlengine.learn.reward_scale import RewardScale

#: the summary key of the run's count of updates the NaN guard skipped
SKIPPED_UPDATES = "train/skipped_updates"


class Learner:
    """Runs the updates of one algorithm."""

    def __init__(self, algorithm: Algorithm, specs: RunSpecs, converters: Converters, replay: Any = None,
                 reward_scale: Optional[RewardScale] = None, device: str = "", jit_compile: bool = False,
                 replicas: Optional[Replicas] = None):
        self.algorithm = algorithm
        self.specs = specs
        self.converters = converters
        self.replay = replay
        self.reward_scale = reward_scale
        self.device = device  # train.device: every update's ops are placed there (the buffer stays on the host)
        self.jit_compile = jit_compile  # train.jit_compile: each update's loss and gradients compiled by XLA
        self.replicas = replicas  # train.learner_devices: each update's minibatch split over them
        self.skipped_updates = tf.Variable(0, dtype=tf.int64, trainable=False, name="skipped_updates")
        # the NaN guard: updates skipped in a row, and what was not finite in the newest one
        self.nonfinite_streak = tf.Variable(0, dtype=tf.int64, trainable=False, name="nonfinite_streak")
        self.nonfinite_culprit = tf.Variable("", dtype=tf.string, trainable=False, name="nonfinite_culprit")
        self.totals = LossTotals(specs.loss, type(algorithm).__name__)
        # autograph=False (inside): explicit loops
        self.train = FixedSignatureFunction(self._train)
        self.train_from_replay = FixedSignatureFunction(self._train_from_replay)

    # -- on-policy -------------------------------------------------------------
    def _train(self, experience: Experience) -> dict:
        """Preprocess ``[T + 1, B]`` experience and run every epoch of minibatch updates (on ``train.device``)."""
        with on_device(self.device):
            return self._epochs(experience)

    def _epochs(self, experience: Experience) -> dict:
        if self.reward_scale is not None:  # row 0 repeats the previous unroll's last row: observed then
            self.reward_scale.observe(tf.nest.map_structure(lambda x: x[1:], experience))
            experience = self.reward_scale.scaled(experience)
        batch = self.algorithm.preprocess_experience(self._with_distributions(experience))
        spec = self.converters.spec_of(batch, outer_dims=2)
        flat = tf.nest.flatten(self.converters.to_params(batch))
        recurrent = self.algorithm.needs_time_dimension
        if recurrent:  # sequences are kept whole; minibatches pick copies: [B, T]
            flat = [swap_leading(t) for t in flat]
        else:  # rows are independent: one flat batch [T * B]
            flat = [tf.reshape(t, [-1, *t.shape[2:]]) for t in flat]
        num_rows, size, num_minibatches = minibatch_layout(flat[0], self.algorithm.mini_batch_size)

        num_epochs = self.algorithm.num_epochs
        pick = minibatch_picker(flat, num_epochs, num_rows, size, num_minibatches)

        def prepare(params: Nest) -> tuple:
            return self._info_fn(params, spec, recurrent), None

        def update(u, totals):  # the epochs' minibatches in one loop: a nested loop costs more per update
            params = tf.nest.pack_sequence_as(params_spec(spec), pick(u))
            return u + 1, self.totals.add(totals, self._update(prepare, params))

        num_updates = num_epochs * num_minibatches
        _, totals = tf.while_loop(lambda u, _: u < num_updates, update, (tf.constant(0), self.totals.zeros()),
                                  parallel_iterations=1)
        return self._with_counts(self.totals.averages(totals, num_updates))

    # -- from replay -------------------------------------------------------------
    def store(self, experience: Experience, begin: Any = 1) -> None:
        """Add rows ``begin..T`` of a ``[T + 1, B]`` unroll to the buffer (in graph or eagerly).

        Row 0 repeats the previous unroll's last row, so ``begin`` is 1 except for a copy's first
        unroll. The buffer keeps raw rewards; the reward scale, if any, observes the same rows.
        """
        if self.reward_scale is not None:
            self.reward_scale.observe(tf.nest.map_structure(lambda x: x[begin:], experience))
        self.replay.add(rows_to_store(kept_in_replay(experience, self.algorithm), begin))

    def _train_from_replay(self, num_updates: Any) -> dict:
        """Sample and update ``num_updates`` times (on ``train.device``); returns the average losses."""
        with on_device(self.device):
            return self._updates_from_replay(num_updates)

    def _updates_from_replay(self, num_updates: Any) -> dict:
        algorithm = self.algorithm

        def one_update(i, totals):
            sample = self.replay.sample(algorithm.mini_batch_size, algorithm.priority_beta)
            weight = sample.weights if algorithm.prioritized_replay else None
            loss = self._update(self._prepare_replayed, (sample.experience, weight))
            if algorithm.prioritized_replay:
                self._update_finite_priorities(sample.indices, loss.priority)
            return i + 1, self.totals.add(totals, loss)

        _, totals = tf.while_loop(lambda i, _: i < num_updates, one_update,
                                  (tf.constant(0), self.totals.zeros()), parallel_iterations=1)
        return self._with_counts(self.totals.averages(totals, num_updates))

    def _prepare_replayed(self, sampled: tuple) -> tuple:
        """Sampled ``[B, L]`` sequences and their weights, made ready for the tape: ``(info_fn, weight)``."""
        sequences, weight = sampled
        algorithm = self.algorithm
        experience = tf.nest.map_structure(swap_leading, sequences)  # [L, B]
        if algorithm.needs_time_dimension:  # its train loop carries the state, so its rows must have one
            experience = self._with_state(experience)
        if self.reward_scale is not None:  # the buffer's rewards are raw: scaled as of now
            experience = self.reward_scale.scaled(experience)
        batch = algorithm.preprocess_experience(self._with_distributions(experience))
        if algorithm.needs_time_dimension:
            spec = self.converters.spec_of(batch, outer_dims=2)
            params = tf.nest.map_structure(swap_leading, self.converters.to_params(batch))
            return self._info_fn(params, spec, recurrent=True), weight

        def info_fn():
            return algorithm.train_step(batch, ()).info
        return info_fn, weight

    def _with_state(self, batch: Any) -> Any:
        """Replayed ``[L, B]`` rows with a ``state`` field as the specs have it: replay keeps no policy state
        for an algorithm that starts from the initial one (:func:`kept_in_replay`), so its rows carry zeros."""
        if tf.nest.flatten(batch.state) or not tf.nest.flatten(self.specs.experience.state):
            return batch
        rows = tf.shape(batch.step_type)[:2]
        return batch._replace(state=tf.nest.map_structure(
            lambda s: tf.zeros(tf.concat([rows, s.shape.as_list()], 0), s.dtype), self.specs.experience.state))

    def _with_counts(self, summaries: dict) -> dict:
        """The summaries, with the run's count of skipped updates read in the same call (an eager read of
        the variable cost the trainer an op of its own every iteration) and the reward scale in use, if any."""
        summaries[SKIPPED_UPDATES] = self.skipped_updates.read_value()
        if self.reward_scale is not None:
            summaries["diagnostics/reward_scale"] = self.reward_scale.std()
        return summaries

    def _update_finite_priorities(self, indices: Any, priorities: Any) -> None:
        """New priorities for the sampled starts, unless one is not finite.

        A non-finite priority comes with an update the NaN guard skips: the sampled
        starts keep their old priorities, and the guard (not the sum tree's check)
        is what names the culprit and stops the run.
        """
        def update() -> Any:
            self.replay.update_priorities(indices, priorities)
            return tf.constant(True)

        tf.cond(all_finite([priorities]), update, lambda: tf.constant(False))

    # -- one update ----------------------------------------------------------------
    def _update(self, prepare: Callable[[Any], tuple], data: Any) -> LossInfo:
        """One gradient step on ``data`` (rows first): ``prepare(data)`` gives ``(info_fn, weight)`` before
        the tape, ``info_fn`` runs under it, ``train_complete`` makes the loss. With replicas each device
        prepares and differentiates its shard of the rows, and the gradients are averaged."""
        if self.replicas is None:
            loss_info, grads_and_vars = self._gradients(*prepare(data))
        else:
            loss_info, grads_and_vars = self.replicas.loss_and_gradients(
                lambda shard: self._gradients(*prepare(shard)), data)
        check = FiniteCheck(loss_info, grads_and_vars)

        def apply():
            self.algorithm.apply_gradients(grads_and_vars)
            self.algorithm.after_update()
            self.nonfinite_streak.assign(0)
            return tf.constant(0, tf.int64)

        def skip():
            self.nonfinite_streak.assign_add(1)
            self.nonfinite_culprit.assign(check.culprit())
            return tf.constant(1, tf.int64)

        self.skipped_updates.assign_add(tf.cond(check.ok, apply, skip))
        return loss_info

    def _gradients(self, info_fn: Callable[[], Nest], weight: Optional[Any]) -> tuple[LossInfo, list]:
        """``train_complete``'s loss and gradients, as one XLA cluster with ``train.jit_compile``.

        Only this part is compiled: the NaN guard's string variable and the replay buffer's
        ops around it have no XLA kernels.
        """
        if not self.jit_compile:
            return self._loss_and_gradients(info_fn, weight)
        variables: list = []

        def compiled() -> tuple:
            loss_info, grads_and_vars = self._loss_and_gradients(info_fn, weight)
            variables[:] = [v for _, v in grads_and_vars]  # variables cannot be a function's outputs
            return loss_info, [g for g, _ in grads_and_vars]

        loss_info, grads = tf.function(compiled, jit_compile=True, autograph=False)()
        return loss_info, list(zip(grads, variables))

    def _loss_and_gradients(self, info_fn: Callable[[], Nest], weight: Optional[Any]) -> tuple[LossInfo, list]:
        with tf.GradientTape(persistent=True) as tape:
            info = info_fn()
        loss_info, grads_and_vars = self.algorithm.train_complete(tape, info, weight)
        del tape
        return loss_info, grads_and_vars

    def check_nonfinite_streak(self, limit: int) -> None:
        """Stop the run once ``limit`` updates in a row were skipped as not finite."""
        streak = int(self.nonfinite_streak.numpy())
        if streak < limit:
            return
        culprit = self.nonfinite_culprit.numpy().decode()
        raise NonFiniteError(
            f"{streak} updates in a row skipped because {culprit} was not finite (train.max_nonfinite_updates "
            f"= {limit}); try a lower learning rate, normalising observations (train.transformers = "
            f'["normalize"]), or checking the rewards for NaN or huge values')

    def _info_fn(self, params: Nest, spec: Nest, recurrent: bool) -> Callable[[], Nest]:
        if recurrent:
            return lambda: self._train_over_time(params, spec)
        return lambda: self.algorithm.train_step(self.converters.from_params(params, spec), ()).info

    def _train_over_time(self, params: Nest, spec: Nest) -> Nest:
        """``train_step`` over ``[b, T]`` sequences in a while loop; infos stacked ``[T, b]``."""
        time_major = tf.nest.map_structure(swap_leading, params)
        first = tf.nest.flatten(time_major)[0]
        # a static length (replayed sequences have one) keeps the stacked infos' shape static
        length, batch = first.shape[0] or tf.shape(first)[0], tf.shape(first)[1]
        info_spec = params_spec(self.specs.train_info)
        arrays = [tf.TensorArray(s.dtype, size=length, element_shape=[None, *s.shape])
                  for s in tf.nest.flatten(info_spec)]
        initial = self.algorithm.initial_state(batch)

        def step(t, state, arrays):
            exp = self.converters.from_params(tf.nest.map_structure(lambda x: x[t], time_major), spec)
            state = reset_where_first(exp.step_type, state, initial)
            out = self.algorithm.train_step(exp, state)
            flat_info = tf.nest.flatten(self.converters.to_params(out.info))
            return t + 1, out.state, [a.write(t, x) for a, x in zip(arrays, flat_info)]

        _, _, arrays = tf.while_loop(lambda t, *_: t < length, step,
                                     (tf.constant(0), self._first_state(time_major, initial), arrays),
                                     parallel_iterations=1)
        stacked = tf.nest.pack_sequence_as(info_spec, [a.stack() for a in arrays])
        return self.converters.from_params(stacked, self.specs.train_info)

    def _first_state(self, time_major: Experience, initial: Nest) -> Nest:
        """Start from the stored rollout state of the first row, or from zeros.

        On-policy sequences are whole unrolls, so the stored state is exact;
        from replay it is used only when the algorithm sets ``use_rollout_state``.
        """
        stored = time_major.state
        use_stored = self.replay is None or self.algorithm.use_rollout_state
        if use_stored and tf.nest.flatten(stored):
            return tf.nest.map_structure(lambda s: s[0], stored)
        return initial

    def _with_distributions(self, experience: Experience) -> Experience:
        return experience._replace(
            rollout_info=self.converters.from_params(experience.rollout_info, self.specs.rollout_info))
