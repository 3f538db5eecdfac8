"""``rlengine tune --ray``: the trials of ``rlengine tune`` as Ray Tune trials, anywhere in the cluster.

The search is Optuna's TPE (the same sampler, startup trials and seed as
the local tune) inside Ray Tune's ``OptunaSearch``; the scheduler is ASHA,
which stops a trial whose objective trails its peers' at the same env step
(``time_attr = env_steps``, judged from a third of the budget, like the local
median pruner). ``--concurrent N`` trials train at a time, each with
``--ray-cpus`` / ``--ray-gpus``.

Files, under ``--tune-dir`` (where every node sees it, on a cluster)::

    ray/                Ray Tune's experiment: the searcher's state, every trial's results
    study.log           the Optuna study OptunaSearch asks and tells (the local tune's journal file)
    trial-<n>/          the run directory of trial n (config.toml, metrics, checkpoints)
    best.toml           the full config of the best complete trial, as the local tune writes it

A trial is one ``rlengine.Engine`` run in a Ray Tune worker; every
evaluation reports ``eval_return``, ``objective`` (the mean of the last
``--last-evals``) and ``env_steps``. When the driver dies, the same command
restores the experiment (``Tuner.restore``): finished trials are kept, and
an unfinished one starts again in its own run directory, so the engine
resumes it from its last checkpoint.
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any, Optional

from ray import tune
from ray.tune.schedulers import ASHAScheduler
from ray.tune.search.optuna import OptunaSearch
from rlengine_optuna import report
from rlengine_optuna import study as studies
from rlengine_optuna.params import parse_params, toml_value
from rlengine_optuna.trial import COMPLETE, TrialReporter, run_trial
from rlengine_optuna.tuner import TuneResult, print_summary, session_seed

from rlengine import Engine
from rlengine_ray.cluster import RayConnection

EXPERIMENT = "ray"  # Ray Tune's directory in the tune dir
METRIC = "objective"
NUMBER = "rlengine_trial"  # the config key that hands a trial its Optuna trial number (its run directory)


class TuneTrial:
    """What :class:`~rlengine_optuna.trial.TrialReporter` asks of an Optuna trial, answered by Ray Tune:
    every evaluation is reported; ASHA, not the trial, decides to stop it (it ends the trial's worker)."""

    def __init__(self, number: int, last_evals: int):
        self.number, self.last_evals, self.returns = number, last_evals, []

    def report(self, value: float, step: int) -> None:
        self.returns.append(value)
        tune.report({"eval_return": value, METRIC: statistics.fmean(self.returns[-self.last_evals:]),
                     "env_steps": step})

    def should_prune(self) -> bool:
        return False


class Space:
    """The search space, define-by-run: each --param asks the Optuna trial for its value (a class, not a
    closure, so Ray Tune can save the searcher for ``Tuner.restore``)."""

    def __init__(self, params: list):
        self.params = params

    def __call__(self, trial: Any) -> None:
        for param in self.params:
            param.suggest(trial)


def train_trial(values: dict, *, run: dict) -> None:
    """(In a Ray Tune worker) one trial: the run of ``values`` (a sampled value per --param key)."""
    params = parse_params(run["params"])
    root = os.path.join(run["tune_dir"], f"trial-{values[NUMBER]}")
    overrides = [*run["overrides"], *(p.override(values[p.key]) for p in params),
                 f"train.root_dir={toml_value(root)}"]
    reporter = TrialReporter(TuneTrial(values[NUMBER], run["last_evals"]))
    outcome = run_trial(lambda r: Engine(run["config"], overrides, disabled_plugins=run["disabled_plugins"],
                                         extra_plugins=[("tune-trial", r)]), reporter, run["last_evals"])
    if outcome.state != COMPLETE and not outcome.reason.startswith("diverged"):
        raise RuntimeError(outcome.reason)  # failed: Ray Tune records the error, the search goes on


def run_on_ray(tuner: Any, address: str, cpus: float, gpus: float, concurrent: int) -> int:
    """``rlengine tune --ray``: run the study of ``tuner`` (an ``rlengine_optuna`` Tuner) on Ray Tune."""
    start = time.perf_counter()
    tune_dir = os.path.abspath(tuner.tune_dir)
    connection = RayConnection(address)
    with studies.locked(tune_dir):
        storage = studies.open_storage(tune_dir)
        fingerprint = studies.fingerprint_of(tuner.params, tuner.objective, tuner.base.config.to_dict())
        study = studies.open_study(storage, tune_dir, fingerprint, tuner.settings.force)
        connection.connect()
        try:
            wanted = tuner.settings.trials - studies.finished_count(study)  # --trials counts the study's in all
            if wanted > 0 or os.path.isdir(os.path.join(tune_dir, EXPERIMENT)):
                _tuner(tuner, tune_dir, storage, cpus, gpus, concurrent, wanted).fit()
        finally:
            connection.disconnect()
        path = write_best(tuner, study, tune_dir)
    print()
    print_summary(TuneResult(study, tune_dir, path, time.perf_counter() - start), tuner.params, tuner.objective)
    return 0


def write_best(tuner: Any, study: Any, tune_dir: str) -> Optional[str]:
    """``best.toml`` of the best complete trial, as the local tune writes it; its path, or None."""
    best = report.best_trial(study)
    if best is None:
        return None
    overrides = [*tuner.base_overrides, *(p.override(best.params[p.key]) for p in tuner.params)]
    config = Engine(tuner.settings.config, overrides, plugins=tuner.base.plugins).config.to_dict()
    return report.write_best(tune_dir, best, config, tuner.objective)


class NumberedSearch(OptunaSearch):
    """Ray Tune's OptunaSearch, which also hands each trial its Optuna trial number: its run directory is
    ``trial-<number>``, as in the local tune's layout."""

    def suggest(self, trial_id: str) -> Optional[dict]:
        values = super().suggest(trial_id)
        if isinstance(values, dict):
            values[NUMBER] = self._ot_trials[trial_id].number
        return values

    def on_trial_complete(self, trial_id: str, result: Optional[dict] = None, error: bool = False) -> None:
        """Also the env steps and seconds the local tune's table shows."""
        if result and trial_id in self._ot_trials:
            trial = self._ot_trials[trial_id]
            trial.set_user_attr("env_steps", result.get("env_steps"))
            trial.set_user_attr("seconds", round(float(result.get("time_total_s") or 0.0), 2))
        super().on_trial_complete(trial_id, result, error)


def _tuner(tuner: Any, tune_dir: str, storage: Any, cpus: float, gpus: float, concurrent: int,
           trials: int) -> tune.Tuner:
    """A new Ray Tune experiment in ``tune_dir/ray``, or the one a driver that died left there."""
    s = tuner.settings
    run = {"params": list(s.params), "config": s.config, "overrides": tuner.base_overrides, "tune_dir": tune_dir,
           "last_evals": s.last_evals, "disabled_plugins": tuple(s.disabled_plugins)}
    trainable = tune.with_resources(tune.with_parameters(train_trial, run=run), {"cpu": cpus, "gpu": gpus})
    path = os.path.join(tune_dir, EXPERIMENT)
    if tune.Tuner.can_restore(path):
        print(f"rlengine: tune: continuing the Ray Tune experiment in {path}", flush=True)
        return tune.Tuner.restore(path, trainable, resume_unfinished=True, resume_errored=True)
    import optuna

    sampler = optuna.samplers.TPESampler(n_startup_trials=s.startup_trials, seed=session_seed(tuner.seed, 0))
    search = NumberedSearch(Space(tuner.params), metric=METRIC, mode="max", sampler=sampler,
                            study_name=studies.STUDY_NAME, storage=storage)
    budget = tuner.base.config.train.num_env_steps
    scheduler = None if s.pruner == "none" else ASHAScheduler(
        time_attr="env_steps", max_t=budget, grace_period=max(1, budget // 3))
    return tune.Tuner(
        trainable,
        tune_config=tune.TuneConfig(metric=METRIC, mode="max", search_alg=search, scheduler=scheduler,
                                    num_samples=trials, max_concurrent_trials=concurrent),
        run_config=tune.RunConfig(name=EXPERIMENT, storage_path=tune_dir, verbose=0,
                                  failure_config=tune.FailureConfig(max_failures=2)))
