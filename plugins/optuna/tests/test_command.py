"""``rlengine tune`` on the command line: registered lazily by the entry point, one-line errors, the
resume line, and one short end-to-end study of PPO on CartPole-v1 whose best.toml ``rlengine train`` takes."""

import importlib.metadata as md
import json
import os
import subprocess
import sys

import pytest
from rlengine_optuna import tuner
from rlengine_optuna.command import resume_command

from rlengine import cli
from rlengine.config import read_toml


def run_main(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_entry_point_registers_tune(capsys):
    code, out, _ = run_main(capsys, "plugins", "--json")
    [row] = [row for row in json.loads(out) if row["name"] == "optuna"]

    assert code == 0 and row["distribution"] == "rlengine-optuna"
    assert row["version"] == md.version("rlengine-optuna") and row["commands"] == ["tune"]


def test_listing_the_command_imports_neither_optuna_nor_tensorflow():
    code = ("import sys; from rlengine import cli; cli.commands_of(); "
            "print(sorted(m for m in ('optuna', 'tensorflow') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True).stdout

    assert out.strip() == "[]"


@pytest.mark.parametrize("argv, words", [
    (["--param", "ppo.learning_rate=uniform:0:1"], "--param 'ppo.learning_rate=uniform:0:1': unknown kind 'uniform'"),
    ([], "nothing to tune: give at least one --param"),
    (["--param", "ppo.gamma=float:0.9:0.99", "--trials", "0"], "--trials must be at least 1, got 0"),
])
def test_bad_flags_are_one_line(capsys, tmp_path, argv, words):
    code, out, err = run_main(capsys, "tune", "--tune-dir", tmp_path / "t", *argv)

    assert code == 2 and out == ""
    assert err.strip().splitlines() == [f"rlengine: error: {err.strip().removeprefix('rlengine: error: ')}"]
    assert words in err
    assert not (tmp_path / "t").exists()


def test_the_resume_line_repeats_the_command_with_its_tune_dir():
    assert resume_command(["tune", "--param", "a.b=int:1:2"], "tune/x") == \
        "rlengine tune --param a.b=int:1:2 --tune-dir tune/x"
    assert resume_command(["tune", "--tune-dir=d"], "d") == "rlengine tune --tune-dir=d"


def test_an_interrupted_tune_prints_one_line_and_exits_by_the_signal(capsys, tmp_path, monkeypatch):
    def interrupted(self):
        raise tuner.TuneInterrupted(2, str(tmp_path / "t"), 3, 20)

    monkeypatch.setattr(tuner.Tuner, "run", interrupted)
    code, out, err = run_main(capsys, "tune", "--param", "ppo.gamma=float:0.9:0.99", "--tune-dir", tmp_path / "t")

    assert code == 130 and out == "", err
    assert err.strip() == (f"rlengine: tune stopped by SIGINT with 3 of 20 trials finished (the study is in "
                           f"{tmp_path / 't'}); resume with: rlengine tune --param ppo.gamma=float:0.9:0.99 "
                           f"--tune-dir {tmp_path / 't'}")


@pytest.mark.thorough  # the root suite leaves it out for time; this package's tox env runs it
def test_a_short_study_of_ppo_on_cartpole_prints_its_table_and_best_toml_trains(capsys, tmp_path):
    tune_dir = tmp_path / "tune"
    quick = ["--set", "train.writers=[]", "--set", "train.eval_interval=1", "--set", "train.num_eval_episodes=2"]
    code, out, err = run_main(capsys, "tune", "--trials", "1", "--num-env-steps", "256", "--tune-dir", tune_dir,
                              "--param", "ppo.learning_rate=loguniform:1e-4:1e-2", "--param",
                              "ppo.activation=categorical:tanh,relu", *quick)

    assert code == 0, err
    lines = out.splitlines()
    header = lines.index(next(line for line in lines if line.startswith("trial  state")))
    assert lines[header + 1].split()[:4] == ["0", "COMPLETE", lines[header + 1].split()[2], "256"]
    assert f"its config is {tune_dir / 'best.toml'}" in out
    code, out, err = run_main(capsys, "train", tune_dir / "best.toml", "--root-dir", tmp_path / "best", *quick)
    assert code == 0, err
    assert os.path.exists(tmp_path / "best" / "config.toml")


@pytest.mark.thorough  # a training run: tox runs it in this plugin's env; the root suite leaves it out
def test_a_short_study_on_the_graph_environment_tf_cartpole(capsys, tmp_path):
    tune_dir = tmp_path / "tune"
    code, out, err = run_main(capsys, "tune", "--trials", "2", "--num-env-steps", "512", "--tune-dir", tune_dir,
                              "--pruner", "none", "--param", "ppo.learning_rate=loguniform:1e-4:1e-2",
                              "--set", "train.env='tf/CartPole-v1'", "--set", "train.writers=[]",
                              "--set", "train.eval_interval=1", "--set", "train.num_eval_episodes=2")

    assert code == 0, err
    lines = out.splitlines()
    header = lines.index(next(line for line in lines if line.startswith("trial  state")))
    assert [line.split()[:2] for line in lines[header + 1:header + 3]] == [["0", "COMPLETE"], ["1", "COMPLETE"]]
    assert read_toml(str(tune_dir / "best.toml"))["train"]["env"] == "tf/CartPole-v1"
