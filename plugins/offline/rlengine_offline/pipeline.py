"""The offline pipeline (``train.pipeline = "offline"``, chosen by ``train.dataset``): updates from a dataset,
no environment stepped.

When the run starts (or resumes) the dataset's episodes are loaded into a replay buffer of the
engine's (one ring holding every row, in episode order, sized to the dataset); a run built only to
evaluate (``rlengine eval``, ``play``, ``export``) loads none. Then the learner samples its updates from it as it
samples an off-policy run's replay: ``mini_batch_length`` consecutive rows, drawn with the run's own
random generator. An iteration is ``updates_per_iteration`` updates, and that is what it counts
towards ``train.num_env_steps``: an offline run's budget is its gradient updates. Evaluation steps the
run's environment as any run's does, and adds ``eval/normalized_score`` when the dataset has D4RL's
reference scores.

An algorithm with a ``fit_dataset(observations)`` method (``td3_bc``, for its observation normalisation)
gets every observation of the dataset when a run starts; not on a resume, where its checkpoint holds what
it kept. The pipeline keeps no state of its own: the buffer is the dataset again after a resume, and the
sampling generator is the run's, which checkpoints hold; so a resumed run samples what an uninterrupted
one would.
"""

from __future__ import annotations

import time
from typing import Any

import attrs
import numpy as np
import tensorflow as tf

from rlengine import ConfigError, Iteration, Pipeline, zeros_from_spec
from rlengine.learn.replay.buffer import ReplayBuffer, kept_in_replay
from rlengine_offline.datasets import check_spaces, dataset_chunks, normalised_score, open_dataset


@attrs.define(kw_only=True)
class OfflineConfig:
    """Options of the offline pipeline (TOML section ``[offline]``)."""

    #: gradient updates per iteration; train.num_env_steps counts updates in an offline run
    updates_per_iteration: int = attrs.field(default=1000, validator=attrs.validators.gt(0))


class OfflinePipeline(Pipeline):
    config_class = OfflineConfig
    reads_datasets = True

    @classmethod
    def env_layout(cls, train: Any, config: Any, algorithm_class: Any) -> list:
        if not train.dataset:
            raise ConfigError('train.pipeline = "offline" learns from a dataset: set train.dataset (--dataset ID)')
        return []  # nothing is stepped for training; the core builds the evaluation environment

    def __init__(self, context: Any, config: Any):
        super().__init__(context, config)
        train, specs = context.config.train, context.specs
        if train.transformers:
            raise ConfigError(f"train.transformers = {train.transformers}: an offline run feeds the dataset's "
                              "observations as they are; leave train.transformers empty")
        self.dataset = open_dataset(train.dataset)
        check_spaces(self.dataset, specs.raw_time_step.observation, specs.action, train.env)
        self.rows_spec = kept_in_replay(specs.experience, context.algorithm)
        self.learner = context.learner
        self.replay: Any = None  # made by start(): a run built to evaluate (rlengine eval, play) loads no rows
        self.updates = tf.constant(config.updates_per_iteration)
        self.no_rows = zeros_from_spec(specs.experience, [1, train.num_envs])  # the trainer's episode stats: none

    def start(self) -> None:
        observations = self._load_rows()
        fit = getattr(self.context.algorithm, "fit_dataset", None)
        if fit is not None:  # statistics of the dataset an algorithm keeps (td3_bc's normalisation), once
            fit(np.concatenate(observations))

    def _load_rows(self) -> list:
        """Fill the replay with the dataset's rows; their observations, chunk by chunk."""
        length = self.context.algorithm.mini_batch_length
        rows = self.dataset.total_steps + self.dataset.total_episodes
        self.replay = ReplayBuffer(self.rows_spec, 1, max(rows, length), sequence_length=length, name="dataset")
        observations = []
        for chunk in dataset_chunks(self.dataset, self.rows_spec):
            self.replay.add(chunk)
            observations.append(chunk.observation)
        # the learner samples whatever replay it holds: here the dataset's (the core makes one only for
        # algorithms that collect off-policy)
        self.learner.replay = self.replay
        return observations

    def resume(self, state: bytes) -> bool:
        self._load_rows()  # the algorithm's dataset statistics are in the checkpoint just restored
        return False

    def iterate(self, env_steps: int) -> Iteration:
        t0 = time.perf_counter()
        losses = self.learner.train_from_replay(self.updates)
        return Iteration(self.no_rows, losses, 0.0, time.perf_counter() - t0,
                         env_steps=self.config.updates_per_iteration)

    def evaluation_metrics(self, metrics: dict) -> dict:
        score = normalised_score(self.dataset, metrics["eval/average_return"])
        return {} if score is None else {"eval/normalized_score": score}
