"""Evaluation of the greedy policy on environments of its own, in one graph call.

A ``tf.function`` call costs about 300 µs here, more than a CartPole step:
calling one per step made evaluation most of a short run (5.8 s of the
default run's 13 s). One evaluation is one call instead: a ``tf.while_loop``
steps the environment through ``tf.numpy_function`` (as collection does),
takes the greedy step and keeps the score; the episodes' returns and
lengths come back in one table for NumPy to average::

    while any copy has episodes to play:
        action = greedy(transformed observation)      # statistics not updated
        time step = env.step(action)                  # Python, from inside the graph
        a copy whose episode ended records it in table[copy, episodes it played]
"""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf

from rlengine.api import Algorithm, Environment
from rlengine.api.data import StepType
from rlengine.collect import stopping
from rlengine.collect.env_caller import EnvCaller
from rlengine.collect.faults import FaultWatch
from rlengine.collect.policy_step import greedy
from rlengine.collect.stepping_function import SteppingFunction
from rlengine.collect.transformers import TransformerChain


class Evaluator:
    """Runs ``num_episodes`` greedy episodes, spread over the copies of ``env``.

    Copy ``i`` plays a fixed quota of episodes, so short episodes are not
    over-represented; transformers are applied without updating. A stop
    request (SIGINT / SIGTERM during training) ends it between two steps with
    :class:`~rlengine.collect.stopping.StopRequested`: a thousand episodes
    must not keep a stopping run waiting. A fault-guarded environment is
    watched as in collection: a step that hangs past its timeout ends the
    evaluation with the environment's own error.
    """

    def __init__(self, env: Environment, chain: TransformerChain, algorithm: Algorithm, num_episodes: int):
        self.env = env
        self.chain = chain
        self.algorithm = algorithm
        self.num_episodes = num_episodes
        copies = env.batch_size
        self.quota = np.array([num_episodes // copies + (i < num_episodes % copies) for i in range(copies)])
        # the stop check runs in the step's own Python call: free next to the step
        self.caller = EnvCaller(env, env.time_step_spec(),
                                before_call=lambda: stopping.raise_if_requested("evaluation"))
        self.watch = FaultWatch(env)
        self.evaluate = SteppingFunction(self._evaluate, self.caller)

    def run(self) -> dict:
        self.caller.error = None
        try:
            returns, lengths = self.watch.call(self.evaluate)
        except tf.errors.OpError as exc:
            if self.caller.error is not None:  # a stop request, or the environment's own error
                raise self.caller.error from exc
            raise
        played = np.arange(returns.shape[1])[None, :] < self.quota[:, None]
        returns, lengths = returns.numpy()[played], lengths.numpy()[played]
        return {
            "eval/average_return": float(np.mean(returns)),
            "eval/std_return": float(np.std(returns)),
            "eval/average_length": float(np.mean(lengths)),
            "eval/episodes": float(len(returns)),
        }

    def close(self) -> None:
        self.watch.close()

    def _evaluate(self) -> tuple[Any, Any]:
        """Every copy's episodes: ``(returns, lengths)``, each ``[copies, most episodes of a copy]``."""
        batch, width = self.env.batch_size, int(self.quota.max())
        quota = tf.constant(self.quota, tf.int64)

        def playing(raw, t_state, p_state, score, table):
            return tf.reduce_any(score[2] < quota)

        def step(raw, t_state, p_state, score, table):
            action, t_state, p_state = greedy(self.chain, self.algorithm, raw, t_state, p_state, batch)
            raw = self.caller.step(action)
            score, table = _record(raw, score, table, quota)
            return raw, t_state, p_state, score, table

        score = (tf.zeros([batch], tf.float64), tf.zeros([batch], tf.int64), tf.zeros([batch], tf.int64))
        table = (tf.zeros([batch, width], tf.float64), tf.zeros([batch, width], tf.int64))
        start = (self.caller.reset(), self.chain.initial_state(batch), self.algorithm.initial_state(batch),
                 score, table)
        *_, table = tf.while_loop(playing, step, start, parallel_iterations=1)
        return table


def _record(raw: Any, score: tuple, table: tuple, quota: Any) -> tuple[tuple, tuple]:
    """Add this step to each copy's episode; a copy whose episode ended writes it in its next table column.

    ``score`` is (return, length, episodes played) per copy, ``table`` (returns, lengths) per episode.
    """
    returns, lengths, played = score
    live = (played < quota) & tf.not_equal(raw.step_type, StepType.FIRST)  # FIRST: the auto-reset after LAST
    returns += tf.where(live, tf.cast(raw.reward, tf.float64), tf.zeros_like(returns))
    lengths += tf.cast(live, tf.int64)
    ended = live & tf.equal(raw.step_type, StepType.LAST)
    rows = tf.where(ended)[:, 0]
    at = tf.stack([rows, tf.gather(played, rows)], axis=1)
    table = (tf.tensor_scatter_nd_update(table[0], at, tf.gather(returns, rows)),
             tf.tensor_scatter_nd_update(table[1], at, tf.gather(lengths, rows)))
    zero_f, zero_i = tf.zeros_like(returns), tf.zeros_like(lengths)
    score = (tf.where(ended, zero_f, returns), tf.where(ended, zero_i, lengths), played + tf.cast(ended, tf.int64))
    return score, table
