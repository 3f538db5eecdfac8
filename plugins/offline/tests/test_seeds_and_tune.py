"""``rlengine train --dataset ID --seeds LIST`` trains one offline run per seed, each evaluated on its own;
``rlengine tune`` over an offline run scores each trial by its evaluation return (not the normalised score)."""

import importlib.metadata
import json

import numpy as np
import pytest
import tomllib

from rlengine import cli, hookimpl

pytest.importorskip("rlengine_algorithms", reason="iql builds on the algorithms plugin's critics")
DATASET = "pendulum/controller-v0"
#: a tiny IQL: two iterations of 20 updates, one evaluation episode after each
TINY = {"train.num_env_steps": 40, "train.eval_interval": 1, "train.num_eval_episodes": 1,
        "offline.updates_per_iteration": 20, "iql.hidden_sizes": "[16]", "iql.mini_batch_size": 32}


def controller(observation):
    """Pendulum: a smooth torque of its observation (the dataset's expert reference is its return)."""
    return np.clip([-3.0 * observation[1] - observation[2]], -2.0, 2.0).astype(np.float32)


def sets(**extra):
    return [word for key, value in {**TINY, **extra}.items() for word in ("--set", f"{key}={value}")]


@pytest.mark.thorough  # two child processes, each importing TensorFlow
def test_seeds_train_an_offline_run_each_into_its_own_dir_with_its_own_evaluation(record, tmp_path, capsys):
    if not any(e.name == "offline" for e in importlib.metadata.entry_points(group="rlengine")):
        pytest.skip("the children are rlengine train processes: they need the offline plugin installed")
    record(DATASET, "Pendulum-v1", 2, controller, expert=True)
    parent = tmp_path / "seeds"
    code = cli.main(["train", "--algorithm", "iql", "--dataset", DATASET, "--seeds", "0-1", "--jobs", "2",
                     "--root-dir", str(parent), *sets(**{"train.writers": '["jsonl"]'})])
    assert code == 0, capsys.readouterr()
    returns = []
    for seed in (0, 1):
        run_dir = parent / f"seed-{seed}"
        with open(run_dir / "config.toml", "rb") as file:
            train = tomllib.load(file)["train"]
        assert (train["seed"], train["dataset"], train["pipeline"], train["env"]) == (seed, DATASET, "offline",
                                                                                      "Pendulum-v1")
        rows = [json.loads(line) for line in open(run_dir / "metrics.jsonl")]
        evaluations = [row for row in rows if "eval/average_return" in row]
        assert [row["env_steps"] for row in evaluations] == [20, 40]  # updates, not env steps
        assert all("eval/normalized_score" in row for row in evaluations)
        returns.append(evaluations[-1]["eval/average_return"])
    assert returns[0] != returns[1]  # each seed its own weights, sampling and evaluation episodes


class Evaluations:
    """Every evaluation's metrics of every run in this process, one list per run."""

    def __init__(self):
        self.runs = []

    @hookimpl
    def rlengine_train_start(self, run):
        self.runs.append([])

    @hookimpl
    def rlengine_evaluation_end(self, run, iteration, metrics):
        self.runs[-1].append(dict(metrics))


@pytest.mark.thorough  # two trials and the tuner's checks of its ranges
def test_tune_over_an_offline_run_scores_trials_by_their_evaluation_return(record, offline_plugins, tmp_path):
    pytest.importorskip("rlengine_optuna", reason="tune is the optuna plugin's")
    from rlengine_optuna.tuner import Tuner, TuneSettings

    record(DATASET, "Pendulum-v1", 2, controller, expert=True)
    evaluations = Evaluations()
    raw = {"train": {"algorithm": "iql", "dataset": DATASET, "eager": True, "writers": []}}
    settings = TuneSettings(config=raw, overrides=[f"{key}={value}" for key, value in TINY.items()],
                            params=["iql.beta=float:0.5:5"], trials=2, tune_dir=str(tmp_path / "tune"),
                            last_evals=2, pruner="none", startup_trials=2,
                            extra_plugins=(*offline_plugins, ("evaluations", evaluations)))
    result = Tuner(settings).run()
    trials = result.study.trials
    assert [t.state.name for t in trials] == ["COMPLETE", "COMPLETE"]
    assert len(evaluations.runs) == 2  # the trials' runs, in order (the tuner's checks train none)
    for trial, metrics in zip(trials, evaluations.runs):
        assert trial.value == pytest.approx(np.mean([m["eval/average_return"] for m in metrics]))
        assert trial.value != pytest.approx(np.mean([m["eval/normalized_score"] for m in metrics]))
    with open(result.best_path, "rb") as file:
        best = tomllib.load(file)
    assert (best["train"]["dataset"], best["train"]["pipeline"], best["train"]["env"]) == (DATASET, "offline",
                                                                                           "Pendulum-v1")
