"""The training loop: collect, update, summarise, evaluate, checkpoint.

It fires the lifecycle hooks in the order documented in
:mod:`rlengine.plugin.hookspecs`; ``rlengine_train_end`` runs however the loop ends.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Optional

import attrs
import tensorflow as tf

from rlengine.api.run import Run
from rlengine.errors import TrainingInterrupted
from rlengine.run import signals
from rlengine.run.build import Components
from rlengine.run.checkpoints import RunCheckpoints
from rlengine.run.episodes import EpisodeStats


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
    """Runs the training loop of one :class:`Run`, whichever pipeline it has."""

    def __init__(self, run: Run, components: Components, plugins: Any, start: float):
        self.run, self.components, self.plugins = run, components, plugins
        self.start = start  # perf_counter() when the run began building: training time counts from it
        self.eval_time = 0.0
        self.summary_time = 0.0  # writers and hooks, to keep summaries visibly cheap
        self.cfg = run.config.train
        self.steps_per_iteration = self.cfg.unroll_length * self.cfg.num_envs
        self.stats = EpisodeStats(self.cfg.num_envs)  # saved with checkpoints, for episodes that continue
        self.checkpoints = RunCheckpoints(run, components, self.stats)  # a run dir with checkpoints resumes
        self.checkpoint = self.checkpoints.checkpoint

    def train(self) -> TrainResult:
        run, cfg, parts = self.run, self.cfg, self.components
        hook = self.plugins.hook
        eval_history, last_eval = [], None
        stats = self.stats
        self.checkpoints.restore_or_start()
        while run.env_steps < cfg.num_env_steps:
            parts.algorithm.progress.assign(run.env_steps / cfg.num_env_steps)
            step = parts.pipeline.iterate(run.env_steps)
            run.iteration += 1
            steps = step.env_steps or self.steps_per_iteration
            run.env_steps += steps
            exp = step.experience
            stats.add(exp.step_type.numpy()[1:], exp.reward.numpy()[1:], exp.env_id.numpy()[0])  # numpy slices: no TF op
            metrics = self._iteration_metrics(step.losses, stats, step.collect_seconds, step.update_seconds)
            metrics["train/env_steps_per_sec"] = steps / max(step.collect_seconds + step.update_seconds, 1e-9)
            metrics.update(step.metrics or {})
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
            self._stop_if_needed()
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
        metrics["train/skipped_updates"] = float(self.components.learner.skipped_updates.numpy())
        return metrics

    def _base_metrics(self) -> dict:
        return {"iteration": self.run.iteration, "env_steps": self.run.env_steps,
                "wall_time": time.perf_counter() - self.start}

    def _evaluate(self) -> float:
        run = self.run
        t0 = time.perf_counter()
        metrics = self._base_metrics()
        metrics.update(self.components.evaluator.run())
        metrics["time/evaluation"] = time.perf_counter() - t0
        self.eval_time += metrics["time/evaluation"]
        metrics["time/training"] = self.train_time()
        self.components.write(metrics)
        self.plugins.hook.rlengine_evaluation_end(run=run, iteration=run.iteration, metrics=metrics)
        return metrics["eval/average_return"]

    def save(self) -> Optional[str]:
        """Write a checkpoint and announce it; None (and a warning) if a weight is not finite."""
        bad = first_nonfinite_variable(self.checkpoint)
        if bad is not None:  # never replace good checkpoints with a diverged model
            print(f"rlengine: warning: checkpoint at iteration {self.run.iteration} not written: variable "
                  f"{bad!r} is not finite (the newest checkpoint is the last good one)", file=sys.stderr)
            return None
        path = self.checkpoints.save()
        self.plugins.hook.rlengine_checkpoint_saved(run=self.run, iteration=self.run.iteration, path=path)
        return path

    def _stop_if_needed(self) -> None:
        """End the run after this iteration: diverged (NaN guard) or asked to by a signal."""
        self.components.learner.check_nonfinite_streak(self.cfg.max_nonfinite_updates)
        signal_number = signals.stop_requested()
        if signal_number is not None:  # save() keeps a checkpoint of this iteration that exists already
            raise TrainingInterrupted(signal_number, self.run.root_dir, self.save())


def first_nonfinite_variable(checkpoint: tf.train.Checkpoint) -> Optional[str]:
    """The checkpoint path of the first floating-point weight that is not finite, or None.

    The replay buffer is not checked: it holds observations, not weights, and
    can be large.
    """
    view = tf.train.TrackableView(checkpoint)
    queue = [(name, obj) for name, obj in view.children(checkpoint).items() if name != "replay"]
    seen = set()
    while queue:
        path, obj = queue.pop(0)
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, tf.Variable):
            if obj.dtype.is_floating and not bool(tf.reduce_all(tf.math.is_finite(obj))):
                return f"{path} ({obj.name})"
            continue
        queue.extend((f"{path}/{name}", child) for name, child in view.children(obj).items())
    return None
