"""``rlengine runs`` (the table, each run's status) and ``rlengine plot`` of several seeds (groups, bands)."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tomli_w
from rlengine_tools import bands
from rlengine_tools.runs import find_runs, run_info

from rlengine import Engine, cli
from rlengine.testing import testing_plugin, tiny_config


def run_main(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def fake_run(path, seed=0, budget=100, checkpoint=100, evals=((50, 10.0), (100, 30.0)), target=None, lr=1e-3):
    """A run directory as rlengine train leaves it: config.toml, metrics.jsonl, a checkpoint marker."""
    path.mkdir(parents=True)
    config = {"algorithm": "ppo", "env": "CartPole-v1", "seed": seed, "num_env_steps": budget,
              "root_dir": str(path)}
    if target is not None:
        config["target_return"] = target
    (path / "config.toml").write_text(tomli_w.dumps({"train": config, "ppo": {"learning_rate": lr}}))
    rows = [{"iteration": i, "env_steps": s, "wall_time": 2.0 * i, "eval/average_return": r}
            for i, (s, r) in enumerate(evals, 1)]
    (path / "metrics.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    if checkpoint is not None:
        (path / "checkpoints").mkdir()
        (path / "checkpoints" / "ckpt-3.complete").write_text(json.dumps({"env_steps": checkpoint}))
    return path


def lock(path, pid, held=False):
    """The lock file a run leaves; ``held``: and the OS lock on it, as a training process holds it."""
    (path / ".rlengine.lock").write_text(json.dumps({"pid": pid, "host": os.uname().nodename, "since": 0}))
    if held:
        fd = os.open(path / ".rlengine.lock", os.O_RDWR)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        HELD_LOCKS.append(fd)  # kept open (and locked) until the test ends


HELD_LOCKS: list = []


@pytest.fixture(autouse=True)
def _release_locks():
    yield
    while HELD_LOCKS:
        os.close(HELD_LOCKS.pop())


def dead_pid():
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(done.stdout)


# -- runs --------------------------------------------------------------------------------------
def test_runs_lists_each_run_with_its_status(capsys, tmp_path):
    parent = tmp_path / "p"
    fake_run(parent / "seed-0", seed=0)  # checkpoint at the budget
    fake_run(parent / "seed-1", seed=1, checkpoint=50, evals=[(50, 12.5)])  # stopped halfway
    fake_run(parent / "seed-2", seed=2, checkpoint=50, evals=[(50, 40.0)], target=35.0)  # stopped at the target
    lock(fake_run(parent / "seed-10", seed=10, checkpoint=None, evals=[(50, 5.0)]), os.getpid(), held=True)
    lock(fake_run(parent / "seed-3", seed=3, checkpoint=50), dead_pid())  # killed -9: the lock file is left
    # killed -9 long ago, its pid since taken by a live process: the OS lock went with the trainer
    lock(fake_run(parent / "seed-4", seed=4, checkpoint=50), os.getpid())
    (parent / "seed-0.log").write_text("")
    code, out, err = run_main(capsys, "runs", parent)

    assert code == 0, err
    header, *lines = out.splitlines()
    assert header.split() == ["run", "algorithm", "env", "seed", "env", "steps", "best", "eval", "last", "eval",
                              "status", "wall", "time"]
    rows = [line.split() for line in lines]
    assert [r[0] for r in rows] == ["seed-0", "seed-1", "seed-2", "seed-3", "seed-4", "seed-10"]  # natural order
    assert rows[0] == ["seed-0", "ppo", "CartPole-v1", "0", "100", "30.0", "30.0", "finished", "4.0", "s"]
    assert [r[7] for r in rows] == ["finished", "interrupted", "finished", "interrupted", "interrupted", "running"]
    assert rows[1][4:7] == ["50", "12.5", "12.5"]


def test_a_damaged_metrics_file_is_one_warning_and_the_other_runs_still_list(capsys, tmp_path):
    parent = tmp_path / "p"
    fake_run(parent / "seed-0", seed=0)
    damaged = fake_run(parent / "seed-1", seed=1) / "metrics.jsonl"
    damaged.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe binary\n" + damaged.read_bytes() + b"{not json\n")

    code, out, err = run_main(capsys, "runs", parent)

    assert code == 0, err
    assert [line.split()[7] for line in out.splitlines()[1:]] == ["finished", "finished"]
    assert out.splitlines()[2].split()[5:7] == ["30.0", "30.0"]  # the whole rows around the damage are read
    assert err.count("\n") == 1 and str(damaged) in err and "lines are not JSON rows (first: line 1); read the 2 that are" in err


def test_a_torn_last_row_is_skipped_silently(capsys, tmp_path):
    metrics = fake_run(tmp_path / "run") / "metrics.jsonl"
    metrics.write_text(metrics.read_text() + '{"iteration": 3, "env_st')

    code, out, err = run_main(capsys, "runs", tmp_path / "run")

    assert code == 0 and err == ""


def test_runs_finds_seed_parents_under_a_directory_and_a_single_run(capsys, tmp_path):
    fake_run(tmp_path / "runs" / "a" / "seed-0")
    fake_run(tmp_path / "runs" / "single")
    (tmp_path / "runs" / "empty").mkdir()

    assert find_runs(str(tmp_path / "runs")) == [str(tmp_path / "runs" / "a" / "seed-0"),
                                                 str(tmp_path / "runs" / "single")]
    code, out, _ = run_main(capsys, "runs", tmp_path / "runs" / "single")
    assert code == 0 and out.splitlines()[1].split()[0] == "single"


@pytest.mark.parametrize("make, words", [(lambda p: p.mkdir(), "holds no run (no config.toml in it"),
                                         (lambda p: None, "does not exist"),
                                         (lambda p: p.write_text(""), "is a file")])
def test_runs_of_a_directory_without_runs_is_one_line(capsys, tmp_path, make, words):
    make(tmp_path / "d")
    code, out, err = run_main(capsys, "runs", tmp_path / "d")

    assert code == 2 and out == ""
    assert err.startswith("rlengine: error: ") and words in err and err.count("\n") == 1


def test_runs_of_a_real_run(capsys, tmp_path):
    root = str(tmp_path / "real")
    Engine(tiny_config(root, writers=["jsonl"]), extra_plugins=[("testing", testing_plugin())]).train()
    info = run_info(root)

    assert (info.algorithm, info.env, info.seed, info.env_steps, info.status) == ("toy", "counting", 0, 32, "finished")
    assert info.last_eval is not None and info.best_eval >= info.last_eval and info.wall_time > 0


def test_runs_and_plot_modules_import_no_tensorflow():
    code = "import sys\nimport rlengine_tools.runs, rlengine_tools.plot\nsys.exit('tensorflow' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], timeout=120).returncode == 0


# -- groups and bands ----------------------------------------------------------------------------
def test_runs_are_grouped_by_config_but_seed_and_root_dir_and_labelled_by_what_differs(tmp_path):
    configs = {f"a{s}": {"train": {"algorithm": "ppo", "env": "CartPole-v1", "seed": s, "root_dir": f"a{s}"},
                         "ppo": {"learning_rate": 3e-4}} for s in range(3)}
    configs["b0"] = {"train": {"algorithm": "ppo", "env": "CartPole-v1", "seed": 0, "root_dir": "b0"},
                     "ppo": {"learning_rate": 1e-3}}
    groups = bands.group_runs(list(configs), configs.__getitem__)
    bands.group_labels(groups)

    assert [g.runs for g in groups] == [["a0", "a1", "a2"], ["b0"]]
    assert [g.label for g in groups] == ["ppo CartPole-v1 learning_rate=0.0003 (3 seeds)",
                                         "ppo CartPole-v1 learning_rate=0.001 (1 seed)"]


def seed_curves(n, rng, noise=20.0):
    x = np.arange(1, 11) * 100.0
    return [(x, x / 10 + rng.normal(0, noise, len(x))) for _ in range(n)]


def test_the_band_holds_the_mean_and_narrows_with_more_seeds():
    rng = np.random.default_rng(1)
    widths = {}
    for n in (4, 32):
        grid, values = bands.on_grid(seed_curves(n, rng), [True] * n)
        centre, low, high = bands.band(values)
        assert np.allclose(centre, values.mean(axis=0))
        assert np.all((low <= centre) & (centre <= high))
        widths[n] = np.mean(high - low)
    assert widths[32] < 0.6 * widths[4]  # about 1/sqrt(8) of it
    again = bands.band(bands.on_grid(seed_curves(4, np.random.default_rng(1)), [True] * 4)[1])
    first = bands.band(bands.on_grid(seed_curves(4, np.random.default_rng(1)), [True] * 4)[1])
    assert all(np.array_equal(a, b) for a, b in zip(again, first))  # a fixed seed: the same band every time


def test_on_grid_interpolates_and_only_a_finished_run_keeps_its_last_value():
    short = (np.array([100.0, 300.0]), np.array([1.0, 3.0]))
    long_ = (np.array([100.0, 200.0, 400.0]), np.array([0.0, 2.0, 4.0]))
    grid, held = bands.on_grid([short, long_], [True, True])
    _, dropped = bands.on_grid([short, long_], [False, True])

    assert grid.tolist() == [100.0, 200.0, 300.0, 400.0]
    assert held[0].tolist() == [1.0, 2.0, 3.0, 3.0] and held[1].tolist() == [0.0, 2.0, 3.0, 4.0]
    assert np.isnan(dropped[0, 3])
    centre, low, _ = bands.band(dropped)
    assert centre[3] == 4.0 and np.isnan(low[3])  # one run left there: its value, no band


def test_iqm_cuts_a_quarter_from_each_end_and_smoothing_is_a_trailing_average():
    assert bands.iqm(np.array([0.0, 1.0, 2.0, 100.0])) == 1.5
    assert bands.iqm(np.array([[5.0, 1.0, 3.0]])).tolist() == [3.0]  # fewer than 4: the plain mean
    assert bands.smooth(np.array([1.0, 3.0, 5.0, 7.0]), 2).tolist() == [1.0, 2.0, 4.0, 6.0]
    assert bands.smooth(np.array([1.0, 3.0]), 1).tolist() == [1.0, 3.0]


# -- plot ---------------------------------------------------------------------------------------
def test_plot_of_seed_parents_draws_one_band_per_config(capsys, tmp_path):
    from PIL import Image

    for s in range(3):
        fake_run(tmp_path / "lr-small" / f"seed-{s}", seed=s, evals=[(50, 10.0 + s), (100, 30.0 - s)])
        fake_run(tmp_path / "lr-big" / f"seed-{s}", seed=s, evals=[(50, 5.0), (100, 8.0 + s)], lr=3e-4)
    out = tmp_path / "seeds.png"
    code, text, err = run_main(capsys, "plot", tmp_path / "lr-small", tmp_path / "lr-big", "--out", out,
                               "--smooth", "2", "--iqm")

    assert code == 0, err
    assert text.strip() == (f"rlengine: wrote {out} (6 runs in 2 groups: ppo CartPole-v1 learning_rate=0.001 (3 seeds); "
                            "ppo CartPole-v1 learning_rate=0.0003 (3 seeds))")
    with Image.open(out) as image:
        assert image.format == "PNG" and image.size == (900, 500)
        colours = set(image.convert("RGB").getdata())
    assert (31, 119, 180) in colours and (255, 127, 14) in colours  # the two groups' lines


def test_plot_no_groups_overlays_seeds_and_smooth_below_one_is_refused(capsys, tmp_path):
    for s in range(2):
        fake_run(tmp_path / "p" / f"seed-{s}", seed=s)
    code, text, err = run_main(capsys, "plot", tmp_path / "p", "--out", tmp_path / "c.png", "--no-groups")
    assert code == 0, err
    assert "(2 runs, 2 curves)" in text  # each run's evaluation curve (fake runs log no training return)

    code, _, err = run_main(capsys, "plot", tmp_path / "p", "--out", tmp_path / "c.png", "--smooth", "0")
    assert code == 2 and "--smooth must be at least 1 (1: no smoothing), got 0" in err
