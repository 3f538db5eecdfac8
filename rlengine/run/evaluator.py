"""Evaluation of the greedy policy on environments of its own, in one graph call.

A ``tf.function`` call costs more than a CartPole step: calling one per step
made evaluation close to half of a short run (the default run's; the loop is
kept as ``benchmarks/eval_speed.py``'s reference). One evaluation is one call instead: a ``tf.while_loop``
steps the environment through its stepper (as collection does: a Python environment through
``tf.numpy_function``, a graph environment inside the graph),
takes the greedy step and records what the score needs; NumPy sums the
episodes from the records::

    while any copy has episodes to play:
        action = greedy(transformed observation)      # statistics not updated
        env state, time step = env.step(env state, action)
        record its reward, whether it counts (live) and whether it ended an episode

The loop carries only what decides when it ends (the episodes each copy
played): keeping running scores in the graph made it 3-9% slower
(``benchmarks/eval_speed.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf

from rlengine.api import Algorithm, Environment, GraphEnvironment
from rlengine.api.data import StepType
from rlengine.collect import stopping
from rlengine.collect.faults import FaultWatch
from rlengine.collect.policy_step import greedy
from rlengine.collect.stepper import stepper_for
from rlengine.collect.stepping_function import SteppingFunction
from rlengine.collect.transformers import TransformerChain
from rlengine.run.groups import RowGroups


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

    def __init__(self, env: Environment | GraphEnvironment, chain: TransformerChain, algorithm: Algorithm, num_episodes: int):
        self.env = env
        self.chain = chain
        self.algorithm = algorithm
        self.num_episodes = num_episodes
        copies = env.batch_size
        self.quota = np.array([num_episodes // copies + (i < num_episodes % copies) for i in range(copies)])
        # the stop check runs in the step's own Python call: free next to the step
        self.caller = stepper_for(env, env.time_step_spec(),
                                  before_call=lambda: stopping.raise_if_requested("evaluation"))
        self.watch = FaultWatch(env)
        self.groups = RowGroups.of([env], env.first_env_id + copies)  # an agent's episodes, where rows are agents
        self.evaluate = SteppingFunction(self._evaluate, self.caller)

    def run(self) -> dict:
        self.caller.error = None
        try:
            steps = self.watch.call(self.evaluate)
        except tf.errors.OpError as exc:
            if self.caller.error is not None:  # a stop request, or the environment's own error
                raise self.caller.error from exc
            raise
        reward, live, ended = (t.numpy() for t in steps)
        returns, lengths = episodes_of(reward, live, ended)
        metrics = {
            "eval/average_return": float(np.mean(returns)),
            "eval/std_return": float(np.std(returns)),
            "eval/average_length": float(np.mean(lengths)),
            "eval/episodes": float(len(returns)),
        }
        if self.groups is not None:
            copies, steps_ended = np.nonzero(ended.T)  # copy after copy, as episodes_of counts them
            metrics.update(self.groups.metrics("eval", "average_return", returns, self.env.copy_ids[copies],
                                               reward[steps_ended, copies]))
        return metrics

    def close(self) -> None:
        self.watch.close()

    def _evaluate(self) -> tuple[Any, Any, Any]:
        """Every step of every copy, ``[steps, copies]``: ``(reward, live, ended)``.

        A step is live while its copy has episodes left to play and it is not the
        automatic reset after a LAST step; a live LAST step ends an episode.
        """
        batch = self.env.batch_size
        quota = tf.constant(self.quota, tf.int64)
        reward_dtype = self.caller.spec.reward.dtype

        def playing(t, env_state, raw, t_state, p_state, played, steps):
            return tf.reduce_any(played < quota)

        def step(t, env_state, raw, t_state, p_state, played, steps):
            action, t_state, p_state = greedy(self.chain, self.algorithm, raw, t_state, p_state, batch)
            env_state, raw = self.caller.step(env_state, action)
            live = (played < quota) & tf.not_equal(raw.step_type, StepType.FIRST)
            ended = live & tf.equal(raw.step_type, StepType.LAST)
            steps = [a.write(t, x) for a, x in zip(steps, (raw.reward, live, ended))]
            return t + 1, env_state, raw, t_state, p_state, played + tf.cast(ended, tf.int64), steps

        steps = [tf.TensorArray(dtype, size=0, dynamic_size=True, element_shape=[batch])
                 for dtype in (reward_dtype, tf.bool, tf.bool)]
        start = (tf.constant(0), *self.caller.reset(), self.chain.initial_state(batch),
                 self.algorithm.initial_state(batch), tf.zeros([batch], tf.int64), steps)
        *_, steps = tf.while_loop(playing, step, start, parallel_iterations=1)
        return tuple(a.stack() for a in steps)


def episodes_of(reward: np.ndarray, live: np.ndarray, ended: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Returns and lengths of the episodes in ``[steps, copies]`` records, copy after copy.

    Each return is summed in float64 step after step (``cumsum``), as a running
    score would be: the rows of a copy that do not count add zero.
    """
    returns, lengths = [], []
    counted = np.where(live, reward, 0).astype(np.float64)
    for copy in range(reward.shape[1]):
        start = 0
        for end in np.flatnonzero(ended[:, copy]).tolist():
            returns.append(np.cumsum(counted[start:end + 1, copy])[-1])
            lengths.append(int(np.count_nonzero(live[start:end + 1, copy])))
            start = end + 1
    return np.array(returns, np.float64), np.array(lengths, np.int64)
