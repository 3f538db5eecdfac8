"""``rlengine train --seeds LIST --ray``: each seed a Ray actor, its run where --root-dir points, resumed
from its last checkpoint when its worker dies."""

from __future__ import annotations

import glob
import json
import os
import re
import signal
import threading
import time

import pytest

from rlengine.cli import main

NODE_LINE = re.compile(r"^== .*: on Ray node .* \(worker pid (\d+)\)$", re.M)


def _train(root_dir, *words) -> int:
    return main(["train", "--seeds", "0-1", "--ray", "--root-dir", str(root_dir), "--num-env-steps", "6144",
                 "--set", "train.eval_interval=0", "--set", "train.checkpoint_interval=1", *words])


def test_ray_without_seeds_is_one_line(capsys):
    assert main(["train", "--ray"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("rlengine: error: --ray runs the runs of --seeds on Ray: add e.g. --seeds 0-3") and "\n" not in err


def _kill_worker_after_first_checkpoint(run_dir: str, log_path: str, killed: list) -> None:
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and not glob.glob(os.path.join(run_dir, "checkpoints", "ckpt-*.complete")):
        time.sleep(0.2)
    with open(log_path, encoding="utf-8") as f:
        pids = NODE_LINE.findall(f.read())
    killed.append(int(pids[-1]))
    os.kill(killed[-1], signal.SIGKILL)  # the Ray worker; its child (the run) dies with it


def _checkpoint_steps(run_dir: str) -> int:
    markers = glob.glob(os.path.join(run_dir, "checkpoints", "ckpt-*.complete"))
    newest = max(markers, key=lambda p: int(re.search(r"ckpt-(\d+)\.complete$", p)[1]))
    with open(newest, encoding="utf-8") as f:
        return json.load(f)["env_steps"]


@pytest.mark.ray
def test_a_seed_whose_worker_dies_resumes_from_its_checkpoint_and_finishes_once(local_ray, tmp_path, capsys):
    root = tmp_path / "seeds"
    killed: list = []
    watcher = threading.Thread(target=_kill_worker_after_first_checkpoint, daemon=True,
                               args=(str(root / "seed-0"), str(root / "seed-0.log"), killed))
    watcher.start()
    assert _train(root) == 0
    watcher.join(5)
    assert killed, "the watcher never saw seed 0's first checkpoint"
    seed0, seed1 = ((root / f"seed-{n}.log").read_text(encoding="utf-8") for n in (0, 1))
    assert len(NODE_LINE.findall(seed0)) == 2 and len(NODE_LINE.findall(seed1)) == 1  # one retry, of seed 0 only
    second_life = seed0.split("on Ray node")[-1]
    first_iteration = int(re.search(r"^iter (\d+) \|", second_life, re.M)[1])
    assert first_iteration > 1  # it resumed from a checkpoint, not from scratch
    for n in (0, 1):
        assert _checkpoint_steps(str(root / f"seed-{n}")) == 6144
    out = capsys.readouterr().out
    assert re.search(r"^\s+0\s+finished\s+6144", out, re.M) and re.search(r"^\s+1\s+finished\s+6144", out, re.M)

    assert _train(root) == 0  # the same command again: both are finished, none runs twice
    assert "2 seeds into" in capsys.readouterr().out
    assert len(NODE_LINE.findall((root / "seed-0.log").read_text(encoding="utf-8"))) == 2
