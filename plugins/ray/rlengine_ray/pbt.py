"""``rlengine tune --ray --pbt``: population-based training on Ray Tune's PBT scheduler, through the engine's
exact checkpoints.

``--population N`` members train at once, each a run of the engine with values drawn for every ``--param``.
Every ``--perturb-interval`` env steps the scheduler waits for every member to get there, then ranks them by
their objective (the mean of their last ``--last-evals`` evaluation returns); a member in the bottom quarter *exploits* one of the top quarter:
it stops, copies that member's newest checkpoint (weights, optimizer slots, replay, counters, the random
generator: a whole run directory) into a new generation of its own, and *explores*: each ``--param`` is
perturbed (x0.8 or x1.2, or resampled) and the run continues from the copied checkpoint with those values
(the engine resumes it as it resumes any run, the changed keys accepted). Members report an evaluation and a
checkpoint together (``train.checkpoint_interval`` follows ``train.eval_interval``), so a copy is always of a
state whose score the scheduler saw.

Files, under ``--tune-dir``::

    ray-pbt/                 Ray Tune's experiment (the members' reported checkpoints)
    member-<k>/gen-<g>/      a run directory per member and generation: gen-0 from scratch, each later one
                             from a donor's checkpoint
    member-<k>/lineage.json  per generation: its donor's run directory, the env steps it started at, its values
    best.toml                the config of the member with the best objective, with its last values
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import time
import warnings
from typing import Any, Optional

import attrs
from ray import tune
from ray.tune.schedulers import PopulationBasedTraining
from rlengine_optuna.params import Param, parse_params, toml_value

from rlengine import ConfigError, Engine, hookimpl, write_atomically
from rlengine_ray.cluster import RayConnection

EXPERIMENT = "ray-pbt"
METRIC = "objective"
ORIGIN = "pbt-origin.json"  # in a reported checkpoint: which member's run directory it is


class MemberReporter:
    """The in-process plugin of one member: each checkpoint the run writes is reported with its last
    evaluation, so the scheduler can rank the member and copy it."""

    def __init__(self, root_dir: str, last_evals: int):
        self.root_dir, self.last_evals, self.returns = root_dir, last_evals, []

    @hookimpl
    def rlengine_evaluation_end(self, run: Any, iteration: int, metrics: Any) -> None:
        self.returns.append(float(metrics["eval/average_return"]))

    @hookimpl
    def rlengine_checkpoint_saved(self, run: Any, iteration: int, path: str) -> None:
        if not self.returns:
            return
        origin = {"run_dir": self.root_dir, "env_steps": run.env_steps}
        write_atomically(os.path.join(self.root_dir, ORIGIN), json.dumps(origin))
        tune.report({"eval_return": self.returns[-1], METRIC: statistics.fmean(self.returns[-self.last_evals:]),
                     "env_steps": run.env_steps},
                    checkpoint=tune.Checkpoint.from_directory(self.root_dir))


def pbt_member(values: dict, *, run: dict) -> None:
    """(In a Ray Tune worker) one member's generation: from scratch, or from the checkpoint Tune hands it."""
    member_dir = os.path.join(run["tune_dir"], f"member-{tune.get_context().get_trial_id().split('_')[-1]}")
    os.makedirs(member_dir, exist_ok=True)
    lineage = _lineage(member_dir)
    root = os.path.join(member_dir, f"gen-{len(lineage)}")
    origin = _copy_donor(tune.get_checkpoint(), root)
    params = parse_params(run["params"])
    lineage.append({"generation": len(lineage), "donor": origin.get("run_dir"), "env_steps": origin.get("env_steps", 0),
                    "values": {p.key: p.value_of(values[p.key]) for p in params}, "time": time.time()})
    write_atomically(os.path.join(member_dir, "lineage.json"), json.dumps(lineage, indent=1))
    overrides = [*run["overrides"], *(p.override(values[p.key]) for p in params), f"train.root_dir={toml_value(root)}"]
    reporter = MemberReporter(root, run["last_evals"])
    Engine(run["config"], overrides, disabled_plugins=run["disabled_plugins"], force=bool(origin),
           extra_plugins=[("pbt-member", reporter)]).train()


def _lineage(member_dir: str) -> list:
    try:
        with open(os.path.join(member_dir, "lineage.json"), encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        return []


def _copy_donor(checkpoint: Optional[Any], root: str) -> dict:
    """Copy the reported run directory ``checkpoint`` into ``root``; where it came from (``{}``: none)."""
    if checkpoint is None:
        return {}
    with checkpoint.as_directory() as directory:
        shutil.copytree(directory, root, dirs_exist_ok=True)
    with open(os.path.join(root, ORIGIN), encoding="utf-8") as f:
        return json.load(f)


def mutations(params: list) -> dict:
    """Ray Tune's search space for each ``--param``, what an explored value is resampled from."""
    return {p.key: _space(p) for p in params}


def _space(param: Param) -> Any:
    if param.kind == "float":
        return tune.uniform(param.low, param.high)
    if param.kind == "loguniform":
        return tune.loguniform(param.low, param.high)
    if param.kind == "int":
        return tune.randint(param.low, param.high + 1)
    return tune.choice(list(param.labels))


def run_pbt(tuner: Any, address: str, cpus: float, gpus: float, population: int, interval: int) -> int:
    """``rlengine tune --ray --pbt``: train a population of ``tuner``'s runs (an ``rlengine_optuna`` Tuner)."""
    start = time.perf_counter()
    tune_dir = os.path.abspath(tuner.tune_dir)
    s, cfg = tuner.settings, tuner.base.config.train
    if not cfg.eval_interval:
        raise ConfigError("tune --pbt ranks members by their evaluations: set train.eval_interval above 0")
    every = [f"train.checkpoint_interval={cfg.eval_interval}"]  # each evaluation comes with a checkpoint
    run = {"params": list(s.params), "config": s.config, "overrides": [*tuner.base_overrides, *every],
           "tune_dir": tune_dir, "last_evals": s.last_evals, "disabled_plugins": tuple(s.disabled_plugins)}
    trainable = tune.with_resources(tune.with_parameters(pbt_member, run=run), {"cpu": cpus, "gpu": gpus})
    connection = RayConnection(address)
    connection.connect()
    try:
        # members are functions that resume the engine's checkpoints, not actors reset in place: Tune's advice
        # to reuse actors does not apply
        warnings.filterwarnings("ignore", message="Consider boosting PBT performance")
        grid = _tuner(trainable, tune_dir, tuner.params, population, interval, cfg.num_env_steps).fit()
    finally:
        connection.disconnect()
    best = grid.get_best_result(metric=METRIC, mode="max", scope="last")
    path = _write_best(tuner, best.config, tune_dir, best.metrics or {})
    print()
    print(f"rlengine: tune --pbt: {population} members, {len(_generations(tune_dir))} generations in all, "
          f"{time.perf_counter() - start:.1f} s; best objective {(best.metrics or {}).get(METRIC, float('nan')):.2f}"
          f" with {', '.join(p.override(best.config[p.key]) for p in tuner.params)}")
    if path:
        print(f"rlengine: tune: its config: {path} (rlengine train {path}); lineages: member-*/lineage.json")
    return 0


class WithinBudget(PopulationBasedTraining):
    """PBT that leaves a member alone once it has spent the budget: a copy made then would train nothing."""

    def __init__(self, budget: int, **kwargs: Any):
        super().__init__(**kwargs)
        self.budget = budget

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict) -> str:
        if result.get("env_steps", 0) >= self.budget:
            return self.CONTINUE
        return super().on_trial_result(tune_controller, trial, result)


def _tuner(trainable: Any, tune_dir: str, params: list, population: int, interval: int, budget: int) -> tune.Tuner:
    path = os.path.join(tune_dir, EXPERIMENT)
    if tune.Tuner.can_restore(path):
        print(f"rlengine: tune: continuing the Ray Tune experiment in {path}", flush=True)
        return tune.Tuner.restore(path, trainable, resume_unfinished=True, resume_errored=True)
    # synchronous: every member pauses at each round, so the ranking compares members at the same env steps
    scheduler = WithinBudget(budget, time_attr="env_steps", perturbation_interval=interval, synch=True,
                                        hyperparam_mutations=mutations(params),
                                        quantile_fraction=max(0.25, 1 / population))  # two: one copies the other
    return tune.Tuner(
        trainable, param_space=mutations(params),
        tune_config=tune.TuneConfig(metric=METRIC, mode="max", scheduler=scheduler, num_samples=population,
                                    max_concurrent_trials=population, reuse_actors=False),
        run_config=tune.RunConfig(name=EXPERIMENT, storage_path=tune_dir, verbose=0,
                                  failure_config=tune.FailureConfig(max_failures=2)))


def _generations(tune_dir: str) -> list:
    return [g for m in os.listdir(tune_dir) if m.startswith("member-")
            for g in os.listdir(os.path.join(tune_dir, m)) if g.startswith("gen-")]


def _write_best(tuner: Any, values: dict, tune_dir: str, metrics: dict) -> Optional[str]:
    """``best.toml``: the base config with the best member's last values, as ``rlengine train`` takes it."""
    if not values:
        return None
    overrides = [*tuner.base_overrides, *(p.override(values[p.key]) for p in tuner.params)]
    config = Engine(tuner.settings.config, overrides, plugins=tuner.base.plugins).config
    path = os.path.join(tune_dir, "best.toml")
    header = [f"The best member of the population in {tune_dir}: objective {metrics.get(METRIC, float('nan')):.2f}",
              f"at {metrics.get('env_steps')} env steps. Written by rlengine tune --pbt; its values changed",
              "during training (member-*/lineage.json): this file holds the last ones."]
    config = attrs.evolve(config, train=attrs.evolve(config.train, root_dir=""))  # train picks its own
    write_atomically(path, config.to_toml(header))
    return path
