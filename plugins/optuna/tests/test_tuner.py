"""Studies on the testing kit, in process: they complete, prune, resume, survive diverging and failing
trials, and refuse what they cannot use, each with one line."""

import os
import signal

import optuna
import pytest
from rlengine_optuna import study as studies
from rlengine_optuna.params import ParamError
from rlengine_optuna.trial import TrialReporter
from rlengine_optuna.tuner import TuneInterrupted, Tuner, TuneSettings

from rlengine import ConfigError, Engine, RLEngineError, hookimpl
from rlengine.testing import testing_plugin
from rlengine.testing.failing import NaNPlugin

FAIL, PRUNED, COMPLETE = optuna.trial.TrialState.FAIL, optuna.trial.TrialState.PRUNED, \
    optuna.trial.TrialState.COMPLETE


def tune(kit_settings, *plugins, **changes):
    settings = kit_settings(**changes)
    named = [p if isinstance(p, tuple) else (type(p).__name__.lower(), p) for p in plugins]
    settings["extra_plugins"] = (*settings["extra_plugins"], *named)
    return Tuner(TuneSettings(**settings)).run()


class Counter:
    """Counts the runs started (one per trial) and can interrupt one of them at its first iteration."""

    def __init__(self, interrupt_run=0, how="sigint"):
        self.runs, self.interrupt_run, self.how = 0, interrupt_run, how

    @hookimpl
    def rlengine_train_start(self, run):
        self.runs += 1

    @hookimpl
    def rlengine_iteration_end(self, run, iteration):
        if self.runs == self.interrupt_run and iteration == 1:
            if self.how == "sigint":
                os.kill(os.getpid(), signal.SIGINT)  # the engine finishes the iteration, then stops
            else:
                raise KeyboardInterrupt  # a second Ctrl-C: no waiting


def states(study):
    return [t.state for t in study.trials]


@pytest.mark.thorough  # the root suite leaves it out for time; this package's tox env runs it
def test_a_study_completes_and_writes_a_best_toml_the_engine_trains(kit_settings, tmp_path):
    result = tune(kit_settings, config={"train": {**kit_settings()["config"]["train"], "target_return": 1.0}},
                  trials=3)

    assert states(result.study) == [COMPLETE] * 3
    best = max(result.study.trials, key=lambda t: t.value)
    assert result.best_path == os.path.join(result.tune_dir, "best.toml")
    # every trial ran its whole budget, the target (reached at once) notwithstanding
    assert [t.user_attrs["env_steps"] for t in result.study.trials] == [32] * 3
    for trial in result.study.trials:
        assert os.path.isdir(os.path.join(result.tune_dir, f"trial-{trial.number}", "checkpoints"))
    engine = Engine(result.best_path, [f"train.root_dir={tmp_path / 'best'}"],
                    extra_plugins=[("testing", testing_plugin())])
    assert engine.config.sections["counting"].episode_length == best.params["counting.episode_length"]
    assert engine.config.train.target_return == 1.0  # best.toml keeps what the config says
    assert engine.train().env_steps > 0
    assert "root_dir" not in open(result.best_path).read()


def test_the_objective_is_the_mean_of_the_last_evaluations(kit_settings):
    reporter_values = []

    class Spy:
        @hookimpl
        def rlengine_evaluation_end(self, metrics):
            reporter_values.append(metrics["eval/average_return"])

    result = tune(kit_settings, Spy(), trials=1, last_evals=2, config=kit_settings()["config"])

    # tiny_config: 4 iterations, evaluations at 2 and 4
    assert result.study.trials[0].value == pytest.approx(sum(reporter_values[-2:]) / 2)
    assert result.study.trials[0].intermediate_values == {16: reporter_values[0], 32: reporter_values[1]}


def test_a_trial_the_pruner_prunes_stops_at_that_evaluation(kit_settings):
    from rlengine.testing import tiny_config

    result = tune(kit_settings, pruner=optuna.pruners.ThresholdPruner(lower=1e9), config=tiny_config(num_env_steps=64, eager=True))

    assert states(result.study) == [PRUNED] * 2
    for trial in result.study.trials:
        assert trial.user_attrs["env_steps"] == 16  # the first evaluation, of a budget of 64
        assert trial.user_attrs["reason"] == "pruned by ThresholdPruner at 16 env steps"
    assert result.best_path is None


def test_an_interrupted_study_resumes_without_redoing_finished_trials(kit_settings):
    counter = Counter(interrupt_run=2)
    with pytest.raises(TuneInterrupted) as info:
        tune(kit_settings, counter)
    assert (info.value.signal_number, info.value.finished, info.value.wanted) == (signal.SIGINT, 1, 2)

    again = Counter()
    result = tune(kit_settings, again)

    trials = result.study.trials
    assert [t.state for t in trials] == [COMPLETE, FAIL, COMPLETE]
    assert again.runs == 1  # trial 0 was kept; trial 1 was redone as trial 2
    assert trials[1].user_attrs["reason"] == "interrupted by SIGINT; queued again"
    assert trials[2].user_attrs["retry_of"] == 1 and trials[2].params == trials[1].params


def test_a_second_ctrl_c_also_queues_the_trial_again(kit_settings):
    with pytest.raises(TuneInterrupted):
        tune(kit_settings, Counter(interrupt_run=1, how="keyboard"))

    result = tune(kit_settings)
    assert [t.state for t in result.study.trials] == [FAIL, COMPLETE, COMPLETE]
    assert result.study.trials[1].params == result.study.trials[0].params


def test_a_trial_left_running_by_a_killed_tune_is_redone(kit_settings):
    tune(kit_settings, trials=1)
    tune_dir = kit_settings()["tune_dir"]
    with studies.locked(tune_dir):  # what a tune killed mid-trial leaves: a RUNNING trial with its params
        study = optuna.load_study(study_name=studies.STUDY_NAME, storage=studies.open_storage(tune_dir))
        study.ask({"counting.episode_length": optuna.distributions.IntDistribution(2, 6)})

    result = tune(kit_settings, trials=2)
    trials = result.study.trials
    assert [t.state for t in trials] == [COMPLETE, FAIL, COMPLETE]
    assert trials[1].user_attrs["reason"].startswith("interrupted: its tune process ended")
    assert trials[2].params == trials[1].params


def test_diverging_trials_are_pruned_with_their_reason_and_tuning_goes_on(kit_settings):
    from rlengine.testing import tiny_config

    config = tiny_config(algorithm="nan-toy", num_env_steps=64, max_nonfinite_updates=1, eager=True)
    result = tune(kit_settings, ("nan", NaNPlugin()), config=config, params=["nan-toy.nan_from=float:0.0:0.5"])

    assert states(result.study) == [PRUNED] * 2
    assert all(t.user_attrs["reason"].startswith("diverged: ") for t in result.study.trials)


def test_trials_that_fail_alike_stop_the_study_after_three(kit_settings):
    from rlengine.testing import tiny_config

    config = tiny_config(env="faulty", max_env_restarts=0, eager=True)
    config["faulty"] = {"fail_steps": list(range(1, 1000))}
    with pytest.raises(RLEngineError, match="3 trials in a row failed, the last one with: .*injected step fault"):
        tune(kit_settings, config=config, params=["faulty.episode_length=int:2:6"], trials=5)

    tune_dir = kit_settings()["tune_dir"]
    study = optuna.load_study(study_name=studies.STUDY_NAME, storage=studies.open_storage(tune_dir))
    assert states(study) == [FAIL] * 3


def test_a_tune_dir_of_another_search_is_refused_unless_forced(kit_settings):
    tune(kit_settings, trials=1)

    with pytest.raises(studies.TuneDirError, match=r"tunes counting.episode_length=int:2:6; this command tunes "
                                                    r"counting.episode_length=int:2:5; use another --tune-dir"):
        tune(kit_settings, params=["counting.episode_length=int:2:5"])
    with pytest.raises(studies.TuneDirError, match="was made with train.num_envs = 2; this command has "
                                                   "train.num_envs = 4"):
        tune(kit_settings, overrides=["train.num_envs=4"])
    result = tune(kit_settings, params=["counting.episode_length=int:2:5"], trials=2, force=True)
    assert states(result.study) == [COMPLETE, COMPLETE]
    best = max(result.study.trials, key=lambda t: t.value)  # from either search: best.toml holds its own value
    engine = Engine(result.best_path, extra_plugins=[("testing", testing_plugin())])
    assert engine.config.sections["counting"].episode_length == best.params["counting.episode_length"]


def test_a_tune_dir_in_use_or_holding_other_files_is_refused(kit_settings, tmp_path):
    tune_dir = kit_settings()["tune_dir"]
    with studies.locked(tune_dir):
        with pytest.raises(studies.TuneDirError, match=f"another rlengine tune \\(pid {os.getpid()}\\) is using"):
            tune(kit_settings)
    other = tmp_path / "runs"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(studies.TuneDirError, match=r"holds files \(notes.txt\) but no study.log"):
        tune(kit_settings, tune_dir=str(other))


@pytest.mark.parametrize("param, words", [
    ("counting.episode_lenght=int:2:6", "unknown config key counting.episode_lenght"),
    ("counting.episode_length=int:0:6", "episode_length"),
    ("nosuch.key=float:0:1", "config section [nosuch] matches no loaded plugin"),
])
def test_a_param_the_config_refuses_is_named_before_any_trial(kit_settings, param, words):
    with pytest.raises(ParamError) as info:
        Tuner(TuneSettings(**kit_settings(params=[param])))

    assert str(info.value).startswith(f"--param {param!r}: ") and words in str(info.value)
    assert not os.path.exists(kit_settings()["tune_dir"])


def test_a_config_without_evaluations_is_refused(kit_settings):
    with pytest.raises(ConfigError, match="train.eval_interval is 0"):
        Tuner(TuneSettings(**kit_settings(overrides=["train.eval_interval=0"])))


def test_the_reporter_does_not_report_a_non_finite_return():
    trial = optuna.create_study(direction="maximize").ask()
    reporter = TrialReporter(trial)

    class FakeRun:
        env_steps, stop_reason = 8, None

        def request_stop(self, reason):
            self.stop_reason = reason

    run = FakeRun()
    reporter.rlengine_evaluation_end(run, 1, {"eval/average_return": float("nan")})
    assert reporter.diverged.startswith("diverged: evaluation return nan") and "diverged" in run.stop_reason
    assert trial.study.trials[0].intermediate_values == {}


def test_a_half_written_last_journal_line_is_dropped_and_the_study_goes_on(kit_settings, capsys):
    tune(kit_settings, trials=1)
    journal = os.path.join(kit_settings()["tune_dir"], studies.STUDY_FILE)
    torn = '{"op_code": 5, "worker_id": "x", "trial_id"'  # what a kill -9 mid-append leaves
    with open(journal, "a") as f:
        f.write(torn)

    result = tune(kit_settings, trials=2)
    assert states(result.study) == [COMPLETE, COMPLETE]
    assert f"ended in a half-written entry ({len(torn)} bytes" in capsys.readouterr().err


def test_a_journal_entry_that_is_not_json_is_one_line_naming_the_file_and_the_fix(kit_settings):
    tune(kit_settings, trials=1)
    journal = os.path.join(kit_settings()["tune_dir"], studies.STUDY_FILE)
    with open(journal, "rb") as f:
        lines = f.read().split(b"\n")
    lines.insert(1, b"\x00\xff garbage from a disk error")
    with open(journal, "wb") as f:
        f.write(b"\n".join(lines))

    with pytest.raises(studies.TuneDirError) as info:
        tune(kit_settings, trials=2)
    message = str(info.value)
    assert "\n" not in message and journal in message
    assert "line 2 of" in message and "move it aside" in message


def test_startup_trials_draw_their_values_by_trial_number_whoever_asks_and_in_any_order():
    from rlengine_optuna.sampling import SeededStartup

    space = {"lr": optuna.distributions.FloatDistribution(1e-5, 1e-2, log=True),
             "epochs": optuna.distributions.IntDistribution(4, 20)}

    def study(job):
        tpe = optuna.samplers.TPESampler(n_startup_trials=4, seed=100 + job)  # each job's TPE seeded apart
        return optuna.create_study(sampler=SeededStartup(7, 4, tpe))

    sequential = study(0)
    for _ in range(4):
        trial = sequential.ask(space)
        sequential.tell(trial, trial.params["lr"])
    # two jobs on one storage would ask trials 0..3 interleaved; here one study asked by two samplers in turn,
    # told in reverse order
    shared = study(0)
    asked = []
    for job in (0, 1, 0, 1):
        shared.sampler = study(job).sampler
        asked.append(shared.ask(space))
    for trial in reversed(asked):
        shared.tell(trial, trial.params["lr"])
    assert [t.params for t in shared.trials] == [t.params for t in sequential.trials]
    assert len({t.params["lr"] for t in sequential.trials}) == 4  # four draws, not one repeated
    other_seed = optuna.create_study(sampler=SeededStartup(8, 4, optuna.samplers.TPESampler(seed=0)))
    assert other_seed.ask(space).params != sequential.trials[0].params  # the study's seed matters
