"""``rlengine train --seeds``: parsing, the parent directory, and the child processes (started, failed, stopped).

Most tests run the parent in process with stand-in children (a small script
that needs no TensorFlow: it starts in a blink); two start real
``rlengine train`` children on the testing kit, through a wrapper that adds
the kit's plugin (a child process cannot be handed a plugin object).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import textwrap
import threading
import time

import pytest
import tomli_w

from rlengine import cli
from rlengine.commands import seed_processes, seeds
from rlengine.commands.seeds import SeedsError, parse_seeds
from rlengine.testing import tiny_config

# A stand-in child: `--seed N --root-dir D` as rlengine train gets them; what it does is set by the environment.
FAKE_CHILD = textwrap.dedent("""
    import json, os, signal, sys, time
    argv = sys.argv[1:]
    seed, root = int(argv[argv.index("--seed") + 1]), argv[argv.index("--root-dir") + 1]
    if str(seed) in os.environ.get("FAKE_FAIL", "").split(","):
        print("rlengine: error: seed", seed, "cannot start: boom", file=sys.stderr)
        sys.exit(2)
    def stop(number, frame):
        open(os.path.join(root, "stopped-by-" + signal.Signals(number).name), "w").close()
        sys.exit(128 + number)
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    if str(seed) in os.environ.get("FAKE_KILLED", "").split(","):
        os.makedirs(root, exist_ok=True)
        os.kill(os.getpid(), int(os.environ["FAKE_SIGNAL"]))
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "child.json"), "w") as f:
        json.dump({"pid": os.getpid(), "argv": argv}, f)
    deadline = time.monotonic() + float(os.environ.get("FAKE_SECONDS", "0"))
    while time.monotonic() < deadline:
        time.sleep(0.02)
    print("done", seed)
""")

# The real command line, with the testing kit's plugin added to the plugins each child builds.
KIT_CHILD = textwrap.dedent("""
    import sys
    import rlengine.plugin.manager as manager
    from rlengine.testing import testing_plugin
    build = manager.build_plugins
    def with_kit(*args, **kwargs):
        kwargs["extra_plugins"] = [*kwargs.get("extra_plugins", ()), ("testing", testing_plugin())]
        return build(*args, **kwargs)
    manager.build_plugins = with_kit
    from rlengine import cli
    sys.exit(cli.main())
""")


def child(monkeypatch, tmp_path, script):
    path = tmp_path / "child.py"
    path.write_text(script)
    monkeypatch.setattr(seed_processes, "CHILD_COMMAND", [sys.executable, str(path)])
    monkeypatch.setattr(seed_processes, "POLL_SECONDS", 0.02)


def run_main(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def summary_rows(out: str) -> dict:
    """seed -> the words of its summary-table row."""
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("seed "))
    return {int(line.split()[0]): line.split() for line in lines[header + 1:] if line.strip()}


# -- parsing and checking --------------------------------------------------------------------
@pytest.mark.parametrize("text, expected", [("0-4", [0, 1, 2, 3, 4]), ("0,2,5", [0, 2, 5]), ("7", [7]),
                                            (" 0 - 2 , 9 ", [0, 1, 2, 9]), ("3-3", [3])])
def test_seeds_are_ranges_and_lists(text, expected):
    assert parse_seeds(text) == expected


@pytest.mark.parametrize("text, words", [("0-x", "'0-x' is not a seed or a range"), ("", "'' is not a seed"),
                                         ("4-0", "runs backwards; write 0-4"), ("0-2,1", "names seed 1 twice"),
                                         ("-1", "'-1' is not a seed"), ("0,,1", "'' is not a seed"),
                                         ("4294967296", "above 4294967295")])
def test_bad_seeds_are_one_line_naming_the_text(text, words):
    with pytest.raises(SeedsError, match="^--seeds ") as error:
        parse_seeds(text)
    assert words in str(error.value) and "\n" not in str(error.value)


@pytest.mark.parametrize("argv, words", [
    (["--seeds", "0-1", "--seed", "3"], "--seed and --seeds together"),
    (["--jobs", "2"], "--jobs needs --seeds"),
    (["--seeds", "0-1", "--jobs", "0"], "--jobs must be at least 1, got 0"),
    (["--seeds", "0-1", "--set", "train.seed=4"], "each seed's run gets its own train.seed; use --seeds"),
    (["--seeds", "0-1", "--set", "train.root_dir=x"], "its own train.root_dir; use --root-dir"),
    (["--seeds", "1-0"], "runs backwards"),
])
def test_flags_that_cannot_go_with_seeds_are_one_line(capsys, tmp_path, argv, words):
    code, out, err = run_main(capsys, "train", *argv, "--root-dir", tmp_path / "p")

    assert code == 2 and out == ""
    assert err.startswith("rlengine: error: ") and words in err and err.count("\n") == 1
    assert not (tmp_path / "p").exists()


def test_a_parent_that_is_a_run_or_holds_other_files_is_refused(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "config.toml").write_text("")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("")
    (tmp_path / "seeds" / "seed-0").mkdir(parents=True)
    (tmp_path / "seeds" / "seed-0.log").write_text("")

    with pytest.raises(SeedsError, match="is a single run's directory"):
        seeds.check_parent(str(tmp_path / "run"))
    with pytest.raises(SeedsError, match="holds 'notes.txt', which --seeds did not write"):
        seeds.check_parent(str(tmp_path / "mine"))
    seeds.check_parent(str(tmp_path / "seeds"))  # its own layout
    seeds.check_parent(str(tmp_path / "new"))


def test_the_effective_budget_and_default_parent_follow_the_engine_rules():
    demo = seeds.effective_train(None, [])
    assert demo["algorithm"] == "ppo" and demo["num_env_steps"] == 200_000 and demo["target_return"] == 475.0
    other = seeds.effective_train(None, ['train.env="Pendulum-v1"', "train.num_env_steps=300"])
    assert other["algorithm"] == "ppo" and other["target_return"] is None and other["num_env_steps"] == 300
    args = type("Args", (), {"root_dir": None})()
    assert seeds.parent_dir(args, other).startswith(os.path.join("runs", "ppo-Pendulum-v1-"))
    # a dataset run's env is known only once its plugin has read the dataset: the parent is named after the dataset
    offline = seeds.effective_train(None, ['train.algorithm="iql"', 'train.dataset="mine/pendulum-expert-v0"'])
    assert seeds.parent_dir(args, offline).startswith(os.path.join("runs", "iql-mine_pendulum-expert-v0-"))


def test_child_command_keeps_the_global_options_config_and_overrides(tmp_path):
    import argparse

    args = argparse.Namespace(debug=True, disable_plugin=["gym"], config="run.toml", force=True)
    words = seeds.child_argv(args, ["train.num_env_steps=64"], 3, "p/seed-3")

    assert words == ["--debug", "--disable-plugin", "gym", "train", "run.toml", "--seed", "3", "--root-dir",
                     "p/seed-3", "--set", "train.num_env_steps=64", "--force"]


def test_children_side_by_side_share_the_cores_unless_told(monkeypatch):
    monkeypatch.delenv("TF_NUM_INTRAOP_THREADS", raising=False)
    monkeypatch.setenv("TF_NUM_INTEROP_THREADS", "3")
    monkeypatch.setattr(seeds, "cores", lambda: 8)

    assert seed_processes.child_env(4)["TF_NUM_INTRAOP_THREADS"] == "2"
    assert seed_processes.child_env(4)["TF_NUM_INTEROP_THREADS"] == "3"  # the user's setting stays
    assert "TF_NUM_INTRAOP_THREADS" not in seed_processes.child_env(1)  # alone: TensorFlow's own sizing


def write_run(run_dir, env_steps, evals=()):
    (run_dir / "checkpoints").mkdir(parents=True)
    (run_dir / "checkpoints" / "ckpt-2.complete").write_text(json.dumps({"env_steps": env_steps // 2}))
    (run_dir / "checkpoints" / "ckpt-4.complete").write_text(json.dumps({"env_steps": env_steps}))
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps({"env_steps": s, "eval/average_return": r}) + "\n"
                                                   for s, r in evals))


def test_a_seed_is_finished_at_its_budget_or_at_the_target_it_stopped_at(tmp_path):
    write_run(tmp_path / "budget", 64)
    write_run(tmp_path / "target", 40, [(20, 3.0), (40, 9.0)])
    write_run(tmp_path / "short", 40, [(40, 5.0)])
    train = {"num_env_steps": 64, "target_return": 8.0}

    assert seeds.is_finished(str(tmp_path / "budget"), train)
    assert seeds.is_finished(str(tmp_path / "target"), train)
    assert not seeds.is_finished(str(tmp_path / "short"), train)
    assert not seeds.is_finished(str(tmp_path / "budget"), {"num_env_steps": 65, "target_return": None})
    assert not seeds.is_finished(str(tmp_path / "missing"), train)


# -- stand-in children -------------------------------------------------------------------------
def test_a_failing_seed_lets_the_others_finish_and_is_named(capsys, monkeypatch, tmp_path):
    child(monkeypatch, tmp_path, FAKE_CHILD)
    monkeypatch.setenv("FAKE_FAIL", "1")
    parent = tmp_path / "p"
    code, out, err = run_main(capsys, "train", "--seeds", "0-2", "--jobs", "1", "--root-dir", parent)

    assert code == 2
    assert err.strip() == (f"rlengine: error: 1 of 3 seeds did not finish: seed 1 (exit status 2: seed 1 cannot start: "
                           f"boom); logs: {parent / 'seed-N.log'}")
    rows = summary_rows(out)
    assert [rows[s][1] for s in (0, 1, 2)] == ["finished", "failed", "finished"]
    assert "rlengine: seed 1 failed after" in out and "done 2" in (parent / "seed-2.log").read_text()
    assert sorted(os.listdir(parent)) == ["seed-0", "seed-0.log", "seed-1.log", "seed-2", "seed-2.log"]


def test_a_seed_killed_or_stopped_on_its_own_does_not_count_as_finished(capsys, monkeypatch, tmp_path):
    child(monkeypatch, tmp_path, FAKE_CHILD)
    monkeypatch.setenv("FAKE_KILLED", "1")
    parent = tmp_path / "p"
    for number, words in [(signal.SIGKILL, "seed 1 (killed by SIGKILL: no output)"),
                          (signal.SIGTERM, "seed 1 (stopped by a signal: the same command resumes it)")]:
        monkeypatch.setenv("FAKE_SIGNAL", str(int(number)))
        code, out, err = run_main(capsys, "train", "--seeds", "0,1", "--jobs", "2", "--root-dir", parent)

        assert code == 2 and err.count("\n") == 1
        assert f"1 of 2 seeds did not finish: {words}" in err
        assert summary_rows(out)[1][1] == ("failed" if number == signal.SIGKILL else "interrupted")


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_signal_reaches_every_child_and_starts_no_more(capsys, monkeypatch, tmp_path, number):
    child(monkeypatch, tmp_path, FAKE_CHILD)
    monkeypatch.setenv("FAKE_SECONDS", "60")
    parent = tmp_path / "p"
    started = [parent / f"seed-{s}" / "child.json" for s in (0, 1)]

    def signal_when_both_run():
        deadline = time.monotonic() + 30
        while not all(p.exists() for p in started) and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(os.getpid(), number)

    threading.Thread(target=signal_when_both_run, daemon=True).start()
    t0 = time.monotonic()
    code, out, err = run_main(capsys, "train", "--seeds", "0-2", "--jobs", "2", "--root-dir", parent)

    assert code == 128 + number and time.monotonic() - t0 < 20
    name = signal.Signals(number).name
    assert f"training of seeds 0, 1 stopped by {name}" in err and f"--root-dir {parent}" in err
    for seed in (0, 1):
        assert (parent / f"seed-{seed}" / f"stopped-by-{name}").exists()
        pid = json.loads(started[seed].read_text())["pid"]
        with pytest.raises(ProcessLookupError):  # ended, and reaped
            os.kill(pid, 0)
    rows = summary_rows(out)
    assert [rows[s][1] for s in (0, 1)] == ["interrupted", "interrupted"] and rows[2][1:3] == ["not", "started"]
    assert not (parent / "seed-2").exists()


# -- real children on the testing kit ------------------------------------------------------------
def kit_config(tmp_path, **train):
    path = tmp_path / "kit.toml"
    path.write_text(tomli_w.dumps(tiny_config(**{"writers": ["jsonl"], **train})))
    return path


@pytest.mark.thorough  # the root suite leaves it out for time; this package's tox env runs it
@pytest.mark.first_party  # the children write metrics.jsonl (rlengine-writers)
def test_two_seeds_train_into_their_own_dirs_and_a_rerun_skips_them(capsys, monkeypatch, tmp_path):
    child(monkeypatch, tmp_path, KIT_CHILD)
    config, parent = kit_config(tmp_path), tmp_path / "p"
    code, out, err = run_main(capsys, "train", config, "--seeds", "0,1", "--jobs", "2", "--root-dir", parent)

    assert code == 0, (out, err, [(parent / f"seed-{s}.log").read_text() for s in (0, 1)])
    rows = summary_rows(out)
    assert [rows[s][1:3] for s in (0, 1)] == [["finished", "32"], ["finished", "32"]]
    for seed in (0, 1):
        assert f"seed = {seed}" in (parent / f"seed-{seed}" / "config.toml").read_text()
        assert "32 env steps" in (parent / f"seed-{seed}.log").read_text()

    code, out, err = run_main(capsys, "train", config, "--seeds", "0-1", "--root-dir", parent)
    assert code == 0, err
    assert "2 seeds into" in out and "0 to run" in out and "seed 0 finished already" in out
    assert [summary_rows(out)[s][1] for s in (0, 1)] == ["skipped", "skipped"]


@pytest.mark.slow
@pytest.mark.first_party
def test_ctrl_c_checkpoints_every_real_child_and_leaves_none_running(capsys, monkeypatch, tmp_path):
    child(monkeypatch, tmp_path, KIT_CHILD)
    config, parent = kit_config(tmp_path, num_env_steps=10**9), tmp_path / "p"
    markers = [parent / f"seed-{s}" / "metrics.jsonl" for s in (0, 1)]

    def interrupt_when_both_train():
        deadline = time.monotonic() + 120
        while not all(m.exists() for m in markers) and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt_when_both_train, daemon=True).start()
    code, out, err = run_main(capsys, "train", config, "--seeds", "0-1", "--jobs", "2", "--root-dir", parent)

    assert code == 130, err
    for seed in (0, 1):
        log = (parent / f"seed-{seed}.log").read_text()
        assert "training stopped by SIGINT; checkpoint saved to" in log
        assert seeds.checkpoint_env_steps(str(parent / f"seed-{seed}")) > 0
    pids = [int(line.split("(pid ")[1].split(")")[0]) for line in out.splitlines() if "(pid " in line]
    assert len(pids) == 2
    for pid in pids:
        with pytest.raises(ProcessLookupError):  # ended, and reaped
            os.kill(pid, 0)
