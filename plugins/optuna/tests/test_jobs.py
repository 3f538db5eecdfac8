"""``rlengine tune --jobs N``: N processes train the trials of one study (Optuna's journal file), no more
trials than --trials between them."""

import optuna
import pytest
from rlengine_optuna.jobs import job_argv
from rlengine_optuna.study import STUDY_NAME, open_storage

from rlengine import cli


def test_the_other_jobs_run_the_same_command_without_jobs():
    argv = ["--debug", "tune", "--jobs", "3", "--param", "ppo.gamma=float:0.9:0.99", "--jobs=3", "--trials", "4"]
    assert job_argv(argv) == ["--debug", "tune", "--param", "ppo.gamma=float:0.9:0.99", "--trials", "4"]


def test_jobs_below_one_is_one_line(capsys, tmp_path):
    code = cli.main(["tune", "--param", "ppo.gamma=float:0.9:0.99", "--jobs", "0", "--tune-dir", str(tmp_path)])
    assert code == 2 and capsys.readouterr().err.strip() == "rlengine: error: --jobs must be at least 1, got 0"


@pytest.mark.thorough  # two processes training PPO: tox -e optuna runs it; the root suite leaves it out
def test_two_jobs_share_the_study_and_start_no_more_than_the_trials_wanted(capsys, tmp_path):
    tune_dir = tmp_path / "tune"
    code = cli.main(["tune", "--jobs", "2", "--trials", "4", "--startup-trials", "2", "--num-env-steps", "1024",
                     "--set", "train.eval_interval=1", "--param", "ppo.learning_rate=loguniform:1e-4:3e-3",
                     "--tune-dir", str(tune_dir)])
    assert code == 0
    trials = optuna.load_study(study_name=STUDY_NAME, storage=open_storage(str(tune_dir))).trials
    assert len(trials) == 4 and all(t.state.is_finished() for t in trials)
    assert {t.user_attrs["job"] for t in trials} == {0, 1}  # both processes trained
    assert sorted(p.name for p in tune_dir.glob("trial-*")) == [f"trial-{n}" for n in range(4)]
    assert (tune_dir / "best.toml").exists()
