"""The training loop: collect, update, summarise, evaluate, checkpoint.

It fires the lifecycle hooks in the order documented in
:mod:`rlengine.plugin.hookspecs`; ``rlengine_train_end`` runs however the loop ends.

Every stop leaves a last checkpoint when the run's state allows one
(:meth:`Trainer._stop`): a signal, an environment that failed for good or
hung, the NaN guard (if the weights are finite), a hook or writer that
raised. The state is consistent between iterations and during evaluation;
while an iteration runs it is not (an update may be half applied), except
that an error of collection (the environment, a pipeline's worker thread)
comes before the iteration's update: then the checkpoint holds the state
before that iteration, without the environments' states (a broken or hung
environment cannot give one), so the resumed run starts new episodes.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Callable, Optional

import attrs

from rlengine.api.pipeline import Iteration
from rlengine.api.run import Run
from rlengine.collect import stopping
from rlengine.collect.faults import EnvironmentFault
from rlengine.errors import PluginError, TrainingInterrupted, WorkerError, one_line
from rlengine.learn.learner import SKIPPED_UPDATES
from rlengine.run.build import Components
from rlengine.run.checkpoints.best import BestCheckpoint
from rlengine.run.checkpoints.schedule import CheckpointSchedule
from rlengine.run.checkpoints.store import RunCheckpoints, first_nonfinite_variable  # noqa: F401 (importable from here)
from rlengine.run.episodes import EpisodeStats
from rlengine.run.groups import RowGroups
from rlengine.run.process import signals
from rlengine.run.process.startup import StartupClock

#: Errors of collection: raised before an iteration's update began, so the state before it is intact.
COLLECTION_ERRORS = (EnvironmentFault, WorkerError)
#: Where the loop is, for what a last checkpoint may hold (see the module docstring).
CONSISTENT, ITERATING, UNSAFE = "consistent", "iterating", "unsafe"


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
    #: why a hook ended the run before its budget (``Run.request_stop``); None if it ran to its budget or target
    stop_reason: Optional[str] = None
    #: seconds per start-up phase (``startup/<phase>``, :mod:`rlengine.run.process.startup`); empty if no iteration ran or
    #: this Engine reported them in an earlier ``train()``
    startup: dict = attrs.field(factory=dict)


class Trainer:
    """Runs the training loop of one :class:`Run`, whichever pipeline it has."""

    def __init__(self, run: Run, components: Components, plugins: Any, start: float,
                 on_started: Optional[Callable[[], None]] = None, startup: Optional[StartupClock] = None):
        self.run, self.components, self.plugins = run, components, plugins
        self.startup = startup or StartupClock()
        self.startup_metrics: dict = {}  # filled by the first iteration
        self.on_started = on_started  # called once the checkpoint is restored (or there is none): the run has started
        self.start = start  # perf_counter() when the run began building: training time counts from it
        self.eval_time = 0.0
        self.summary_time = 0.0  # writers and hooks, to keep summaries visibly cheap
        self.cfg = run.config.train
        self.steps_per_iteration = self.cfg.unroll_length * self.cfg.num_envs
        # saved with checkpoints, for episodes that continue; per agent too where the rows are agents
        self.workers = components.learner.replicas  # several learner workers decide together; None: one process
        if self.workers is not None and not self.workers.workers:
            self.workers = None  # several devices of one process decide nothing apart
        self.stats = EpisodeStats(self.cfg.num_envs)  # its row groups once the pipeline has started
        self.checkpoints = RunCheckpoints(run, components, self.stats, plugins)  # a run dir with checkpoints resumes
        self.checkpoint = self.checkpoints.checkpoint
        self.best = BestCheckpoint(run.root_dir, components)  # checkpoints/best/: written by _evaluate
        self.schedule = CheckpointSchedule(self.cfg.checkpoint_interval, self.cfg.checkpoint_seconds)
        self.eval_history: list = []  # (env_steps, train_time, average_return) of this process's evaluations
        self.last_eval: Optional[float] = None
        self._state = UNSAFE  # nothing is restored yet
        self._saved: Optional[tuple] = None  # (iteration, path) of the newest checkpoint this trainer wrote
        self._skipped = 0.0  # train/skipped_updates after the last iteration
        self._skipped_checked: Optional[float] = None  # ... when the NaN guard last read the streak

    def train(self) -> TrainResult:
        run = self.run
        self.checkpoints.restore_or_start()
        if self.workers is not None:
            self.workers.check_resumed_together(self.run.iteration)
        # remote workers report their rows' groups when they start, so they are read only now
        self.stats.groups = RowGroups.of(self.components.pipeline.row_group_sources(), self.cfg.num_envs)
        self.best.resume()  # the best return so far, from its marker
        self.startup.phase("restore")
        if self.on_started is not None:
            self.on_started()
        self._state = CONSISTENT
        try:
            reached = self._loop()
        except BaseException as error:
            final = self._stop(error)
            if final is error:
                raise
            raise final from error
        self.save()  # a run resumed after it finished saves nothing new: that iteration is saved already
        stopped_early = not reached and run.env_steps < self.cfg.num_env_steps
        return TrainResult(run.root_dir, run.iteration, run.env_steps, time.perf_counter() - self.start,
                           self.train_time(), self.last_eval, reached, tuple(self.eval_history),
                           run.stop_reason if stopped_early else None, self.startup_metrics)

    def _loop(self) -> bool:
        """Iterate until the budget or the target; whether the target was reached."""
        run, cfg = self.run, self.cfg
        while run.env_steps < cfg.num_env_steps:
            self._iterate()
            finished = run.env_steps >= cfg.num_env_steps
            # the last iteration is evaluated before its checkpoint, so a resumed finished run evaluates nothing
            if cfg.eval_interval and (finished or run.iteration % cfg.eval_interval == 0):
                self.last_eval = self._evaluate()
                self.eval_history.append((run.env_steps, self.train_time(), self.last_eval))
                if self._chief_says(cfg.target_return is not None and self.last_eval >= cfg.target_return):
                    self.save()
                    return True
            if finished or self._chief_says(self.schedule.due(run.iteration)):
                self.save()
            self._guard_nonfinite()
            if not finished and self._stops_early():
                return False
        return False

    # -- several learner workers: each decision that ends or saves an iteration is taken together ---------
    def _chief_says(self, decision: bool) -> bool:
        """``decision`` as the chief took it, on every worker of a multi-worker learner (else as it is)."""
        return decision if self.workers is None else bool(self.workers.chief_says(int(decision)))

    def _stops_early(self) -> bool:
        """After an iteration: a signal raises StopRequested; a hook's Run.request_stop (or, with several
        learner workers, another worker's stop) ends the run normally with its budget unspent."""
        own = stopping.requested() is not None or self.run.stop_reason is not None
        if self.workers is not None and any(self.workers.every_workers(int(own))) and not own:
            self.run.request_stop("another learner worker stopped")
            return True
        stopping.raise_if_requested("training")  # a signal: stop after this iteration
        return self.run.stop_reason is not None

    def _iterate(self) -> None:
        run, cfg, parts, stats = self.run, self.cfg, self.components, self.stats
        parts.algorithm.progress.assign(run.env_steps / cfg.num_env_steps, read_value=False)
        self._state = ITERATING
        step = parts.pipeline.iterate(run.env_steps)
        if not isinstance(step, Iteration):  # a plugin's pipeline: named here, not deep in the summaries
            raise PluginError(f"pipeline {cfg.pipeline!r} ({type(parts.pipeline).__module__}."
                              f"{type(parts.pipeline).__qualname__}): iterate() returned {type(step).__name__}, "
                              "not rlengine.Iteration; return Iteration(experience, losses, collect_seconds, "
                              "update_seconds)")
        run.iteration += 1
        steps = step.env_steps or self.steps_per_iteration
        run.env_steps += steps
        self._state = CONSISTENT
        exp = step.experience
        stats.start_iteration()
        stats.add(exp.step_type.numpy()[1:], exp.reward.numpy()[1:], exp.env_id.numpy()[0])  # numpy slices: no TF op
        metrics = self._iteration_metrics(step.losses, stats, step.collect_seconds, step.update_seconds)
        metrics["train/env_steps_per_sec"] = steps / max(step.collect_seconds + step.update_seconds, 1e-9)
        metrics.update(step.metrics or {})
        self._skipped = metrics[SKIPPED_UPDATES]
        first = not self.startup.done
        if first:  # reported once, on the row of the first iteration this Engine ran (written whatever the interval)
            self.startup_metrics = self.startup.finish("first_iteration")
            metrics.update(self.startup_metrics)
        t3 = time.perf_counter()
        if first or run.iteration % cfg.summary_interval == 0:
            parts.write({**metrics, **stats.pop()})
        self.plugins.hook.rlengine_iteration_end(run=run, iteration=run.iteration, metrics=metrics)
        self.summary_time += time.perf_counter() - t3

    def _guard_nonfinite(self) -> None:
        """The NaN guard: stop once ``train.max_nonfinite_updates`` updates in a row were skipped.

        The streak grows only with the count of skipped updates, which every
        iteration reports anyway; reading the streak is a host round trip, so
        it happens only when that count moved (or on the first iteration).
        """
        if self._skipped != self._skipped_checked:
            self.components.learner.check_nonfinite_streak(self.cfg.max_nonfinite_updates)
            self._skipped_checked = self._skipped

    def train_time(self) -> float:
        """Seconds since the run began building, evaluation excluded (tracing included)."""
        return time.perf_counter() - self.start - self.eval_time

    def _iteration_metrics(self, losses: dict, stats: EpisodeStats, collect: float, update: float) -> dict:
        metrics = self._base_metrics()
        metrics.update({k: float(v) for k, v in losses.items()})
        metrics.update(stats.latest())  # this iteration's episodes; a written row gets all since the last one
        metrics["time/collect"] = collect
        metrics["time/update"] = update
        metrics["time/training"] = self.train_time()
        metrics["time/summaries"] = self.summary_time
        if SKIPPED_UPDATES not in losses:  # no update this iteration (a dropped unroll, warm-up): the same variable
            metrics[SKIPPED_UPDATES] = float(self.components.learner.skipped_updates.numpy())
        return metrics

    def _base_metrics(self) -> dict:
        return {"iteration": self.run.iteration, "env_steps": self.run.env_steps,
                "wall_time": time.perf_counter() - self.start}

    def _evaluate(self) -> float:
        run = self.run
        t0 = time.perf_counter()
        metrics = self._base_metrics()
        try:
            metrics.update(self.components.evaluate())  # a stop request ends it between two steps
            metrics.update(self.components.pipeline.evaluation_metrics(dict(metrics)))
            self.best.consider(run.iteration, run.env_steps, metrics["eval/average_return"])
        finally:
            self.eval_time += time.perf_counter() - t0
        metrics["time/evaluation"] = time.perf_counter() - t0
        metrics["time/training"] = self.train_time()
        self.components.write(metrics)
        self.plugins.hook.rlengine_evaluation_end(run=run, iteration=run.iteration, metrics=metrics)
        return metrics["eval/average_return"]

    # -- checkpoints -----------------------------------------------------------------------
    def save(self) -> Optional[str]:
        """Write a checkpoint and announce it; None (and a warning) if a weight is not finite."""
        path, written = self._write()
        if written:
            self.plugins.hook.rlengine_checkpoint_saved(run=self.run, iteration=self.run.iteration, path=path)
        return path

    def _write(self) -> tuple[Optional[str], bool]:
        """``(path, whether it is new)`` of a checkpoint of this iteration; ``(None, False)`` if diverged."""
        iteration = self.run.iteration
        if self._saved is not None and self._saved[0] == iteration:
            return self._saved[1], False  # this trainer saved this iteration already (and announced it)
        bad = first_nonfinite_variable(self.checkpoint)
        if bad is not None:  # never replace good checkpoints with a diverged model
            print(f"rlengine: warning: checkpoint at iteration {iteration} not written: variable "
                  f"{bad!r} is not finite (the newest checkpoint is the last good one)", file=sys.stderr)
            return None, False
        state, self._state = self._state, UNSAFE  # a save that fails halfway is not retried on the way out
        t0 = time.monotonic()
        path = self.checkpoints.save()
        self.schedule.saved(time.monotonic() - t0)
        self._state, self._saved = state, (iteration, path)
        return path, True

    # -- stopping ----------------------------------------------------------------------------
    def _stop(self, error: BaseException) -> BaseException:
        """The exception that ends the run, after a last checkpoint when the state allows one.

        A stop request (or an error of a wait a stop request cut short)
        becomes :class:`TrainingInterrupted`; any other error stays itself,
        with a note naming the checkpoint (shown with its traceback, if any).
        """
        if self.workers is not None and self.workers.lost_a_worker(error):
            return WorkerError(f"train.learner_workers: another learner worker stopped answering (it ended or "
                               f"died): {one_line(error)}; every worker's newest checkpoint is kept, and starting "
                               "every worker again with its own command resumes the run")
        path = self._last_checkpoint(error) if self._may_save_after(error) else None
        signal_number = signals.stop_requested()
        if signal_number is not None and isinstance(error, (stopping.StopRequested, *COLLECTION_ERRORS)):
            return TrainingInterrupted(signal_number, self.run.root_dir, path)
        if path is not None:
            error.add_note(f"rlengine: the run was checkpointed to {path} first; the same command resumes it")
        return error

    def _may_save_after(self, error: BaseException) -> bool:
        if not isinstance(error, Exception):  # KeyboardInterrupt (a second Ctrl-C), SystemExit: at once
            return False
        if self._state == ITERATING:  # only collection errors leave the state before the iteration intact
            return isinstance(error, COLLECTION_ERRORS)
        return self._state == CONSISTENT

    def _last_checkpoint(self, error: BaseException) -> Optional[str]:
        """Save on the way out; a failure to save (or of a hook announcing it) must not hide ``error``."""
        try:
            path, written = self._write()
        except Exception as exc:
            error.add_note(f"rlengine: no last checkpoint could be written: {type(exc).__name__}: {one_line(exc)}")
            return None
        if written:
            try:
                self.plugins.hook.rlengine_checkpoint_saved(run=self.run, iteration=self.run.iteration, path=path)
            except Exception as exc:
                error.add_note(f"rlengine: the hook announcing checkpoint {path} failed too: {one_line(exc)}")
        return path

