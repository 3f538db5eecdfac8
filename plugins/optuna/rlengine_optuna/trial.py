"""One trial: an ``rlengine.Engine`` run in this process, its evaluations reported to Optuna.

The run is watched by an in-process plugin (:class:`TrialReporter`) on the
lifecycle hooks: each evaluation's average return goes to
``trial.report(value, step=env_steps)``, and when the pruner says so the
plugin ends the run with ``Run.request_stop``, a normal finish (a last
checkpoint, no error). The objective is the mean return of the last
``last_evals`` evaluations of a run trained to its whole budget.
"""

from __future__ import annotations

import math
import statistics
import time
from typing import Any, Callable, Optional

import attrs

from rlengine import RLEngineError, hookimpl
from rlengine.errors import NonFiniteError, TrainingInterrupted, one_line
from rlengine_optuna.journal import full_disk_error

COMPLETE, PRUNED, FAIL = "complete", "pruned", "fail"


@attrs.frozen
class Outcome:
    """How a trial ended, for ``study.tell`` and the table."""

    state: str  # COMPLETE, PRUNED or FAIL
    value: Optional[float]  # the objective (COMPLETE only)
    reason: str  # why it was pruned or failed, one line ("" when complete)
    env_steps: int
    seconds: float


class TrialReporter:
    """The in-process plugin of one trial: evaluations to Optuna, a pruned or diverged run stopped."""

    def __init__(self, trial: Any):
        self.trial = trial  # an optuna.Trial
        self.returns: list[float] = []  # average return of every evaluation, in order
        self.env_steps = 0
        self.pruned = ""  # why the pruner stopped the run
        self.diverged = ""  # why the run counts as diverged

    @hookimpl
    def rlengine_configure(self, config: Any) -> Any:
        """Trials run to their whole budget: a run stopped at ``train.target_return`` would be scored on
        fewer evaluations than the others (best.toml keeps the target)."""
        if config.train.target_return is None:
            return None
        return attrs.evolve(config, train=attrs.evolve(config.train, target_return=None))

    @hookimpl
    def rlengine_iteration_end(self, run: Any, iteration: int, metrics: Any) -> None:
        self.env_steps = run.env_steps

    @hookimpl
    def rlengine_evaluation_end(self, run: Any, iteration: int, metrics: Any) -> None:
        value = float(metrics["eval/average_return"])
        self.env_steps = run.env_steps
        if not math.isfinite(value):
            self.diverged = f"diverged: evaluation return {value} at {run.env_steps} env steps"
            run.request_stop(f"tune: trial {self.trial.number} {self.diverged}")
            return
        self.returns.append(value)
        self.trial.report(value, step=run.env_steps)
        if self.trial.should_prune():  # never with --pruner none (Optuna's NopPruner)
            self.pruned = f"pruned by {type(self.trial.study.pruner).__name__} at {run.env_steps} env steps"
            run.request_stop(f"tune: trial {self.trial.number} {self.pruned}")

    def objective(self, last_evals: int) -> Optional[float]:
        """Mean return of the last ``last_evals`` evaluations (None before any)."""
        return statistics.fmean(self.returns[-last_evals:]) if self.returns else None


def run_trial(make_engine: Callable[[TrialReporter], Any], reporter: TrialReporter, last_evals: int) -> Outcome:
    """Train the trial's engine; its outcome. A stop by SIGINT or Ctrl-C propagates (the tuner requeues).

    A run that diverges (the NaN guard stops it, or an evaluation is not
    finite) is pruned: the sampler then ranks its region below every
    finished trial. A full disk propagates (the next trials would fail
    alike). Any other error fails the trial with its one line, and tuning
    goes on.
    """
    start = time.perf_counter()

    def ended(state: str, reason: str = "", value: Optional[float] = None) -> Outcome:
        return Outcome(state, value, reason, reporter.env_steps, time.perf_counter() - start)

    try:
        result = make_engine(reporter).train()
    except TrainingInterrupted:
        raise
    except Exception as error:
        if full_disk_error(error) is not None:  # every trial after it would fail alike: the tuner stops the session
            raise
        return _failed(error, ended)
    reporter.env_steps = result.env_steps
    if reporter.diverged:
        return ended(PRUNED, reporter.diverged)
    if reporter.pruned:
        return ended(PRUNED, reporter.pruned)
    value = reporter.objective(last_evals)
    if value is None:
        return ended(FAIL, "the run made no evaluation (set train.eval_interval)")
    return ended(COMPLETE, value=value)


def _failed(error: Exception, ended: Callable[..., Outcome]) -> Outcome:
    """How a trial whose run raised ``error`` ended: pruned if it diverged, else failed with its line."""
    if isinstance(error, NonFiniteError):
        return ended(PRUNED, f"diverged: {_line(error)}")
    if isinstance(error, RLEngineError):
        return ended(FAIL, _line(error))
    # a sampled value TensorFlow refuses, a plugin's bug: this trial fails, not the study
    return ended(FAIL, f"{type(error).__name__}: {_line(error)}")


def _line(error: BaseException) -> str:
    """The error's one line, with the engine's notes dropped (the checkpoint note is noise here)."""
    return " ".join(one_line(error).split()) or type(error).__name__
