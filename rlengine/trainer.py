"""The training loop: collect, update, summarise, evaluate, checkpoint.

It fires the lifecycle hooks in the order documented in
:mod:`rlengine.hookspecs`; ``rlengine_train_end`` runs however the loop ends.
"""

from __future__ import annotations

import os
import time
from typing import Any, Optional

import attrs
import tensorflow as tf

from rlengine.build import Components
from rlengine.config import RunConfig
from rlengine.driver import EpisodeStats
from rlengine.plugins import Plugins


@attrs.define
class Run:
    """What lifecycle hooks see of a run in progress."""

    config: RunConfig
    root_dir: str
    plugins: Plugins
    components: Components
    iteration: int = 0
    env_steps: int = 0

    @property
    def algorithm(self) -> Any:
        return self.components.algorithm

    @property
    def specs(self) -> Any:
        return self.components.specs


@attrs.frozen
class TrainResult:
    """What ``Engine.train()`` returns."""

    root_dir: str
    iterations: int
    env_steps: int
    wall_time: float  # seconds, everything included
    train_time: float  # seconds, evaluation excluded
    eval_return: Optional[float]  # last evaluation's average return
    reached_target: bool
    eval_history: tuple  # (env_steps, train_time, average_return) per evaluation


class Trainer:
    """Runs the synchronous on-policy loop of one :class:`Run`."""

    def __init__(self, run: Run, start: float):
        self.run = run
        self.start = start  # perf_counter() when the run began building: training time counts from it
        self.eval_time = 0.0
        self.summary_time = 0.0  # writers and hooks, to keep summaries visibly cheap
        self.cfg = run.config.train
        self.steps_per_iteration = self.cfg.unroll_length * self.cfg.num_envs
        saved = dict(algorithm=run.components.algorithm, transformers=run.components.chain,
                     iteration=tf.Variable(0, dtype=tf.int64), env_steps=tf.Variable(0, dtype=tf.int64))
        if run.components.buffer is not None:
            saved["replay"] = run.components.buffer
        self.checkpoint = tf.train.Checkpoint(**saved)
        self.checkpoints = tf.train.CheckpointManager(
            self.checkpoint, os.path.join(run.root_dir, "checkpoints"), max_to_keep=self.cfg.keep_checkpoints)

    def train(self) -> TrainResult:
        run, cfg, parts = self.run, self.cfg, self.run.components
        hook = run.plugins.hook
        eval_history, last_eval = [], None
        stats = EpisodeStats(cfg.num_envs)
        carry = parts.pipeline.start()
        while run.env_steps < cfg.num_env_steps:
            parts.algorithm.progress.assign(run.env_steps / cfg.num_env_steps)
            step = parts.pipeline.iterate(carry, run.env_steps)
            carry = step.carry
            run.iteration += 1
            run.env_steps += self.steps_per_iteration
            stats.add(step.experience.step_type[1:].numpy(), step.experience.reward[1:].numpy())
            metrics = self._iteration_metrics(step.losses, stats, step.collect_seconds, step.update_seconds)
            t3 = time.perf_counter()
            if run.iteration % cfg.summary_interval == 0:
                parts.write(metrics)
            hook.rlengine_iteration_end(run=run, iteration=run.iteration, metrics=metrics)
            self.summary_time += time.perf_counter() - t3
            if cfg.eval_interval and run.iteration % cfg.eval_interval == 0:
                last_eval = self._evaluate()
                eval_history.append((run.env_steps, self.train_time(), last_eval))
                if cfg.target_return is not None and last_eval >= cfg.target_return:
                    break
            if cfg.checkpoint_interval and run.iteration % cfg.checkpoint_interval == 0:
                self.save()
        if cfg.eval_interval and (not eval_history or eval_history[-1][0] != run.env_steps):
            last_eval = self._evaluate()
            eval_history.append((run.env_steps, self.train_time(), last_eval))
        self.save()
        reached = cfg.target_return is not None and last_eval is not None and last_eval >= cfg.target_return
        return TrainResult(run.root_dir, run.iteration, run.env_steps, time.perf_counter() - self.start,
                           self.train_time(), last_eval, reached, tuple(eval_history))

    def train_time(self) -> float:
        """Seconds since the run began building, evaluation excluded (tracing included)."""
        return time.perf_counter() - self.start - self.eval_time

    def _iteration_metrics(self, losses: dict, stats: EpisodeStats, collect: float, update: float) -> dict:
        metrics = self._base_metrics()
        metrics.update({k: float(v) for k, v in losses.items()})
        metrics.update(stats.pop())
        metrics["time/collect"] = collect
        metrics["time/update"] = update
        metrics["time/training"] = self.train_time()
        metrics["time/summaries"] = self.summary_time
        metrics["train/env_steps_per_sec"] = self.steps_per_iteration / max(collect + update, 1e-9)
        metrics["train/skipped_updates"] = float(self.run.components.learner.skipped_updates.numpy())
        return metrics

    def _base_metrics(self) -> dict:
        return {"iteration": self.run.iteration, "env_steps": self.run.env_steps,
                "wall_time": time.perf_counter() - self.start}

    def _evaluate(self) -> float:
        run = self.run
        t0 = time.perf_counter()
        metrics = self._base_metrics()
        metrics.update(run.components.evaluator.run())
        metrics["time/evaluation"] = time.perf_counter() - t0
        self.eval_time += metrics["time/evaluation"]
        metrics["time/training"] = self.train_time()
        run.components.write(metrics)
        run.plugins.hook.rlengine_evaluation_end(run=run, iteration=run.iteration, metrics=metrics)
        return metrics["eval/average_return"]

    def save(self) -> str:
        """Write a checkpoint and announce it."""
        self.checkpoint.iteration.assign(self.run.iteration)
        self.checkpoint.env_steps.assign(self.run.env_steps)
        path = self.checkpoints.save(checkpoint_number=self.run.iteration)
        self.run.plugins.hook.rlengine_checkpoint_saved(run=self.run, iteration=self.run.iteration, path=path)
        return path

