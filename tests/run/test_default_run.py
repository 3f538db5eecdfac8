"""`rlengine train` with no arguments: the README's main job, end to end."""

import json
import os
import subprocess
import sys

import pytest

for module in ("rlengine_gym", "rlengine_algorithms", "rlengine_writers"):
    pytest.importorskip(module, reason="the default run needs the first-party plugins")


def test_rlengine_train_with_no_arguments_solves_cartpole(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "rlengine.cli", "train"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "reached the target 475" in proc.stdout
    runs = os.listdir(tmp_path / "runs")
    assert len(runs) == 1 and runs[0].startswith("ppo-CartPole-v1-")
    root = tmp_path / "runs" / runs[0]
    assert (root / "config.toml").exists()
    assert any(name.startswith("events.out.tfevents") for name in os.listdir(root / "tensorboard"))
    rows = [json.loads(line) for line in open(root / "metrics.jsonl")]
    assert all({"iteration", "env_steps", "wall_time"} <= set(r) for r in rows)
    assert max(r["eval/average_return"] for r in rows if "eval/average_return" in r) >= 475
    assert f"tensorboard --logdir {os.path.join('runs', runs[0])}" in proc.stdout
