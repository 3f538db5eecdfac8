"""The study loop behind ``rlengine tune``: sample, train in this process, report, prune, resume.

From Python (the testing kit's plugins as an example)::

    from rlengine_optuna.tuner import TuneSettings, Tuner
    result = Tuner(TuneSettings(config="ppo.toml", params=["ppo.learning_rate=loguniform:1e-5:1e-2"],
                                trials=20, tune_dir="tune/ppo")).run()
    print(result.best_path)

Trials are asked of an Optuna study (TPE sampler, median pruner) kept in
the tune dir, and trained one after the other with ``rlengine.Engine``
(TensorFlow is imported once), each into ``TUNE_DIR/trial-<n>``. Running the
same settings again continues the study: finished trials are kept, and a
trial that was interrupted is failed and queued again, until ``trials``
have finished (complete or pruned).
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
import time
from typing import Any, Optional

import attrs
import optuna

from rlengine import ConfigError, Engine, RLEngineError
from rlengine.errors import TrainingInterrupted
from rlengine_optuna import jobs, report
from rlengine_optuna import study as studies
from rlengine_optuna.journal import disk_full_stop
from rlengine_optuna.params import Param, ParamError, parse_params, toml_value
from rlengine_optuna.sampling import SeededStartup
from rlengine_optuna.trial import FAIL, PRUNED, TrialReporter, run_trial

#: Failed trials in a row (errors other than divergence) after which the study stops: they all fail alike.
MAX_FAILURES_IN_A_ROW = 3
STATES = {"complete": optuna.trial.TrialState.COMPLETE, PRUNED: optuna.trial.TrialState.PRUNED,
          FAIL: optuna.trial.TrialState.FAIL}


@attrs.define(kw_only=True)
class TuneSettings:
    """What one ``rlengine tune`` command asks for (the flags, one for one)."""

    params: list  # the --param texts
    config: Any = None  # TOML path, raw dict of sections, or None (the embedded PPO / CartPole-v1 config)
    overrides: list = attrs.field(factory=list)  # section.key=value, as --set (and --num-env-steps)
    trials: int = attrs.field(default=20, validator=attrs.validators.gt(0))  # finished trials wanted in all
    tune_dir: str = ""  # "": tune/<algorithm>-<env>-<time>
    seed: Optional[int] = None  # every trial's train.seed, and the sampler's seed (None: the config's train.seed)
    last_evals: int = attrs.field(default=3, validator=attrs.validators.gt(0))  # evaluations the objective averages
    pruner: Any = "median"  # "median", "none", or an optuna pruner object
    startup_trials: int = attrs.field(default=5, validator=attrs.validators.ge(0))  # random / unpruned trials first
    force: bool = False  # continue a study made for another search
    disabled_plugins: tuple = ()
    extra_plugins: tuple = ()  # (name, plugin) registered in every trial's run, as rlengine.Engine takes them
    plugins: Any = None  # a plugin manager already built (the CLI's), for checking the config; trials build theirs
    jobs: int = attrs.field(default=1, validator=attrs.validators.gt(0))  # processes training trials at a time
    job_index: int = 0  # > 0: one of the processes --jobs started (rlengine_optuna.jobs)
    argv: tuple = ()  # the rlengine words of this tune, which --jobs starts the other processes with


@attrs.frozen
class TuneResult:
    study: optuna.Study
    tune_dir: str
    best_path: Optional[str]  # best.toml, or None while no trial completed
    seconds: float  # this session


class TuneInterrupted(RLEngineError):
    """SIGINT / SIGTERM (or Ctrl-C) stopped the tune; the running trial is queued again for the next one."""

    def __init__(self, signal_number: int, tune_dir: str, finished: int, wanted: int):
        self.signal_number, self.tune_dir, self.finished, self.wanted = signal_number, tune_dir, finished, wanted
        super().__init__(f"tune stopped by {signal.Signals(signal_number).name} with {finished} of {wanted} "
                         f"trials finished (the study is in {tune_dir})")


class Tuner:
    """Runs one tune session (see the module docstring); bad settings fail here, before any trial."""

    def __init__(self, settings: TuneSettings):
        self.settings = settings
        if not settings.params:
            raise ParamError("nothing to tune: give at least one --param section.key=KIND:SPEC "
                             "(e.g. --param ppo.learning_rate=loguniform:1e-5:1e-2)")
        self.params: list[Param] = parse_params(settings.params)
        self.base_overrides = list(settings.overrides)
        if settings.seed is not None:
            self.base_overrides.append(f"train.seed={settings.seed}")
        self.base = self._engine(self.base_overrides, plugins=settings.plugins)
        train = self.base.config.train
        if not train.eval_interval:
            raise ConfigError("tune scores trials by their evaluations, but train.eval_interval is 0: set it "
                              "(e.g. --set train.eval_interval=10)")
        self._check_params()
        self.objective = f"mean return of the last {settings.last_evals} evaluations"
        self.tune_dir = settings.tune_dir or default_tune_dir(train.algorithm, train.env)
        self.seed = train.seed
        self._best_number: Optional[int] = None

    # -- building runs ---------------------------------------------------------------------
    def _engine(self, overrides: list, reporter: Optional[TrialReporter] = None, plugins: Any = None) -> Engine:
        s = self.settings
        extra = [*s.extra_plugins, *([("tune-trial", reporter)] if reporter is not None else [])]
        return Engine(s.config, overrides, plugins=plugins, disabled_plugins=s.disabled_plugins, extra_plugins=extra)

    def _check_params(self) -> None:
        """Every end of every range (every choice) must make a valid config: a bad --param fails now, named."""
        for param in self.params:
            for corner in param.corners():
                try:
                    Engine(self.settings.config, [*self.base_overrides, param.override(corner)],
                           plugins=self.base.plugins)
                except ConfigError as exc:
                    raise ParamError(f"--param {param.text!r}: {exc}") from None

    def trial_dir(self, number: int) -> str:
        return os.path.join(self.tune_dir, f"trial-{number}")

    # -- the session -----------------------------------------------------------------------
    def run(self) -> TuneResult:
        """The session; a full disk under it stops it with one :class:`~rlengine_optuna.journal.TuneDiskFull`."""
        try:
            return self._session()
        except Exception as error:
            stop = disk_full_stop(error, "a file of the tune")
            if stop is None:
                raise
            if stop.__cause__ is None:  # made here: what it came from, for --debug
                stop.__cause__ = error
            raise stop

    def _session(self) -> TuneResult:
        start = time.perf_counter()
        optuna.logging.set_verbosity(optuna.logging.WARNING)  # tune prints its own line per trial
        s = self.settings
        with contextlib.nullcontext() if s.job_index else studies.locked(self.tune_dir):  # job 0 holds it
            storage = studies.open_storage(self.tune_dir, s.job_index)
            fingerprint = studies.fingerprint_of(self.params, self.objective, self.base.config.to_dict())
            study = studies.open_study(storage, self.tune_dir, fingerprint, s.force)
            self._configure(study)
            for number in [] if s.job_index else studies.requeue_interrupted(study, storage):
                print(f"rlengine: tune: trial {number} was interrupted last time; it is queued again")
            others = jobs.start_jobs(s.argv, s.jobs) if s.jobs > 1 and not s.job_index else []
            try:
                self._loop(study)
                for note in jobs.wait_jobs(others):
                    print(f"rlengine: warning: {note}", file=sys.stderr)
            except KeyboardInterrupt:  # Ctrl-C outside a trial's run (between trials, while building one)
                raise self._interrupted(study, signal.SIGINT) from None
            finally:
                jobs.stop_jobs(others)  # after Ctrl-C or an error: each queues its trial again
            path = self._write_best(study, force=True)
        return TuneResult(study, self.tune_dir, path, time.perf_counter() - start)

    def _configure(self, study: optuna.Study) -> None:
        """TPE (its random startup trials drawn by trial number: :mod:`rlengine_optuna.sampling`) and the
        median pruner (which judges a trial only after a third of its budget: the first evaluations say
        little); TPE's seed moves on with the study, so a resumed session does not draw again."""
        s = self.settings
        tpe = optuna.samplers.TPESampler(n_startup_trials=s.startup_trials,
                                         seed=session_seed(self.seed, len(study.trials), s.job_index))
        study.sampler = SeededStartup(self.seed, s.startup_trials, tpe)  # startup trials alike with any --jobs
        if isinstance(s.pruner, optuna.pruners.BasePruner):
            study.pruner = s.pruner
        elif s.pruner == "median":  # the first evaluations are noisy: judge a trial after a third of its budget
            warmup = self.base.config.train.num_env_steps // 3
            study.pruner = optuna.pruners.MedianPruner(n_startup_trials=s.startup_trials, n_warmup_steps=warmup)
        elif s.pruner == "none":
            study.pruner = optuna.pruners.NopPruner()
        else:
            raise ConfigError(f"unknown pruner {s.pruner!r}; choose median or none")

    def _loop(self, study: optuna.Study) -> None:
        failures = 0
        while True:
            with jobs.asking(self.tune_dir):  # so --jobs processes together start no more than --trials
                started = studies.finished_count(study) + studies.running_count(study)
                if started >= self.settings.trials:
                    return
                trial = study.ask()
            state, reason = self._trial(study, trial, started)
            failures = failures + 1 if state == FAIL else 0
            if failures >= MAX_FAILURES_IN_A_ROW:
                raise RLEngineError(f"{failures} trials in a row failed, the last one with: {reason}; fix that, "
                                    f"then run the same command again (the study in {self.tune_dir} is kept)")
            self._write_best(study)
            gc.collect()  # the previous run's TensorFlow objects, before the next one builds its own

    def _trial(self, study: optuna.Study, trial: optuna.Trial, before: int) -> tuple[str, str]:
        """Run one asked trial and tell the study how it ended; ``(state, reason)``."""
        reporter = TrialReporter(trial)
        try:
            values = {p.key: p.suggest(trial) for p in self.params}
            overrides = [p.override(values[p.key]) for p in self.params]
            trial.set_user_attr("overrides", overrides)  # what best.toml applies, whatever --param says later
            if self.settings.jobs > 1 or self.settings.job_index:
                trial.set_user_attr("job", self.settings.job_index)  # which of --jobs' processes trained it
            print(f"rlengine: tune: trial {trial.number} ({before + 1} of {self.settings.trials}): "
                  f"{report.describe(values, self.params)}", flush=True)
            root = f"train.root_dir={toml_value(self.trial_dir(trial.number))}"
            outcome = run_trial(lambda r: self._engine([*self.base_overrides, *overrides, root], r), reporter,
                                self.settings.last_evals)
        except (TrainingInterrupted, KeyboardInterrupt) as exc:
            trial.set_user_attr("env_steps", reporter.env_steps)
            number = exc.signal_number if isinstance(exc, TrainingInterrupted) else signal.SIGINT
            raise self._interrupted(study, number, trial) from None
        trial.set_user_attr("env_steps", outcome.env_steps)
        trial.set_user_attr("seconds", round(outcome.seconds, 2))
        if outcome.reason:
            trial.set_user_attr("reason", outcome.reason)
        study.tell(trial, outcome.value, state=STATES[outcome.state])
        value = "" if outcome.value is None else f", value {outcome.value:.1f}"
        print(f"rlengine: tune: trial {trial.number} {outcome.state}{value} ({outcome.env_steps} env steps, "
              f"{outcome.seconds:.1f} s)" + (f": {outcome.reason}" if outcome.reason else ""), flush=True)
        return outcome.state, outcome.reason

    def _interrupted(self, study: optuna.Study, signal_number: int,
                     trial: Optional[optuna.Trial] = None) -> TuneInterrupted:
        """Queue the interrupted trial again (it did not finish); the error that ends the session."""
        if trial is not None:
            name = signal.Signals(signal_number).name
            studies.requeue(study, trial, f"interrupted by {name}; queued again")
        self._write_best(study)
        return TuneInterrupted(signal_number, self.tune_dir, studies.finished_count(study), self.settings.trials)

    def _write_best(self, study: optuna.Study, force: bool = False) -> Optional[str]:
        """(Re)write best.toml when the best trial changed (``force``: whatever it is); its path, or None."""
        best = report.best_trial(study)
        if best is None:
            return None
        path = os.path.join(self.tune_dir, report.BEST_FILE)
        if best.number == self._best_number and not force and os.path.exists(path):
            return path
        overrides = [*self.base_overrides, *studies.user_attr(best, "overrides", [])]
        config = self._engine(overrides, plugins=self.base.plugins).config.to_dict()
        self._best_number = best.number
        return report.write_best(self.tune_dir, best, config, self.objective)


def session_seed(seed: int, trials_so_far: int, job: int = 0) -> int:
    """The sampler's seed for a session (``--jobs``: of its job ``job``) starting after ``trials_so_far`` trials.

    Mixed through NumPy's SeedSequence: Mersenne Twister seeds 0 and 3 draw
    nearly the same first numbers, so ``seed + trials_so_far`` would repeat
    the previous session's first trials almost exactly.
    """
    import numpy as np

    return int(np.random.SeedSequence([seed, trials_so_far, *([job] if job else [])]).generate_state(1)[0])


def default_tune_dir(algorithm: str, env: str) -> str:
    safe_env = "".join(c if c.isalnum() or c in "-_." else "_" for c in env)
    return os.path.join("tune", f"{algorithm}-{safe_env}-{time.strftime('%Y%m%d-%H%M%S')}")


def print_summary(result: TuneResult, params: list, objective: str, out: Any = None) -> None:
    """The table of every trial, the counts, and where the best config is (to ``out``, default stdout)."""
    out = out or sys.stdout
    study = result.study
    for line in report.trial_table(study, params):
        print(line, file=out)
    counts = report.counts(study)
    shown = ", ".join(f"{n} {state.lower()}" for state, n in sorted(counts.items()))
    print(f"\nrlengine: tune: {len(study.trials)} trials in {result.tune_dir} ({shown}); this session "
          f"{result.seconds:.0f} s", file=out)
    best = report.best_trial(study)
    if best is None:
        print("rlengine: tune: no trial completed, so there is no best config yet", file=out)
        return
    print(f"rlengine: tune: best trial {best.number}: {objective} {best.value:.1f} with "
          f"{report.describe(best.params, params)}", file=out)
    print(f"rlengine: tune: its config is {result.best_path}; train it with: rlengine train {result.best_path}",
          file=out)
