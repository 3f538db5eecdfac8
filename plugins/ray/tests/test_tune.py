"""``rlengine tune --ray``: trials on Ray Tune (OptunaSearch, ASHA), best.toml as the local tune writes it, and
the same command continuing a study whose driver was killed."""

from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys
import time
import uuid

import pytest
import tomllib

from rlengine.cli import main

pytest.importorskip("ray.tune", reason="rlengine tune --ray needs Ray Tune: pip install -e 'plugins/ray[tune]'")

pytestmark = pytest.mark.ray  # starts Ray processes: tox -e ray runs these

PARAM = "ppo.learning_rate=loguniform:1e-4:3e-3"


def _words(tune_dir, trials: int, steps: int) -> list:
    return ["tune", "--ray", "--concurrent", "2", "--trials", str(trials), "--startup-trials", "2",
            "--num-env-steps", str(steps), "--set", "train.eval_interval=1", "--set", "train.checkpoint_interval=1",
            "--param", PARAM, "--tune-dir", str(tune_dir)]


def test_trials_run_on_ray_tune_and_the_best_is_a_config_train_takes(local_ray, tmp_path, capsys):
    tune_dir = tmp_path / "tune"
    assert main(_words(tune_dir, trials=2, steps=512)) == 0
    out = capsys.readouterr().out
    assert len(glob.glob(str(tune_dir / "trial-*" / "metrics.jsonl"))) == 2
    best = tomllib.loads((tune_dir / "best.toml").read_text(encoding="utf-8"))
    rate = best["ppo"]["learning_rate"]
    assert 1e-4 <= rate <= 3e-3 and f"ppo.learning_rate={rate:.3g}" in out
    assert "root_dir" not in best["train"] and best["train"]["num_env_steps"] == 512


def _marked(marker: str) -> list:
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if marker.encode() in f.read():
                    pids.append(int(pid))
        except OSError:
            pass
    return pids


def _driver(tune_dir, marker: str) -> subprocess.Popen:
    env = {**os.environ, marker: "1"}
    env.pop("RAY_ADDRESS", None)
    return subprocess.Popen([sys.executable, "-m", "rlengine.cli", *_words(tune_dir, trials=3, steps=2048)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_the_same_command_continues_a_tune_whose_driver_was_killed(tmp_path):
    tune_dir, marker = tmp_path / "tune", f"RLENGINE_RAY_TUNE_TEST_{uuid.uuid4().hex}"
    driver = _driver(tune_dir, marker)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not glob.glob(str(tune_dir / "trial-*" / "checkpoints" / "*.complete")):
        time.sleep(0.2)
    driver.kill()  # the driver dies mid-trial; its local Ray's processes are ended with it below
    driver.communicate()
    for pid in _marked(marker):
        os.kill(pid, signal.SIGKILL)
    assert not (tune_dir / "best.toml").exists()

    again = _driver(tune_dir, marker)
    out, _ = again.communicate(timeout=600)
    assert again.returncode == 0, out[-2000:]
    assert "continuing the Ray Tune experiment" in out
    assert (tune_dir / "best.toml").exists()
    assert len(glob.glob(str(tune_dir / "trial-*"))) == 3  # every trial once: the unfinished ones resumed
    for pid in _marked(marker):
        os.kill(pid, signal.SIGKILL)
