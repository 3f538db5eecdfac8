"""Evaluation of the greedy policy on environments of its own."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from rlengine.api import Algorithm, Environment
from rlengine.api.data import StepType
from rlengine.collect import stopping
from rlengine.collect.policy_step import greedy
from rlengine.collect.transformers import TransformerChain


class Evaluator:
    """Runs ``num_episodes`` greedy episodes, spread over the copies of ``env``.

    Copy ``i`` plays a fixed quota of episodes, so short episodes are not
    over-represented; transformers are applied without updating. A stop
    request (SIGINT / SIGTERM during training) ends it between two steps with
    :class:`~rlengine.collect.stopping.StopRequested`: a thousand episodes
    must not keep a stopping run waiting.
    """

    def __init__(self, env: Environment, chain: TransformerChain, algorithm: Algorithm, num_episodes: int):
        self.env = env
        self.chain = chain
        self.algorithm = algorithm
        self.num_episodes = num_episodes
        copies = env.batch_size
        self.quota = np.array([num_episodes // copies + (i < num_episodes % copies) for i in range(copies)])
        self.act = tf.function(self._act, autograph=False)

    def _act(self, raw, transformer_state, policy_state):
        return greedy(self.chain, self.algorithm, raw, transformer_state, policy_state, self.env.batch_size)

    def run(self) -> dict:
        batch = self.env.batch_size
        raw = self.env.reset()
        t_state, p_state = self.chain.initial_state(batch), self.algorithm.initial_state(batch)
        returns, lengths = np.zeros(batch), np.zeros(batch, np.int64)
        done = np.zeros(batch, np.int64)
        finished_returns, finished_lengths = [], []
        while (done < self.quota).any():
            stopping.raise_if_requested("evaluation")  # one function call per step: free next to the step
            action, t_state, p_state = self.act(raw, t_state, p_state)
            raw = self.env.step(tf.nest.map_structure(lambda a: a.numpy(), action))
            live = (done < self.quota) & (raw.step_type != StepType.FIRST)
            returns[live] += raw.reward[live]
            lengths[live] += 1
            for i in np.flatnonzero(live & (raw.step_type == StepType.LAST)):
                finished_returns.append(returns[i])
                finished_lengths.append(lengths[i])
                returns[i], lengths[i] = 0.0, 0
                done[i] += 1
        return {
            "eval/average_return": float(np.mean(finished_returns)),
            "eval/std_return": float(np.std(finished_returns)),
            "eval/average_length": float(np.mean(finished_lengths)),
            "eval/episodes": float(len(finished_returns)),
        }
