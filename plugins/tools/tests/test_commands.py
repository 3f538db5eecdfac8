"""``rlengine eval``, ``play``, ``export`` (in process) and ``plot`` on run directories, and their errors.

Each group trains one tiny run per module and reuses it. The SavedModel is
checked without rlengine installed in test_export.py.
"""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf
from rlengine_tools.export import export_run
from rlengine_tools.play import play_run
from rlengine_tools.rundir import open_run

from rlengine import Engine, RLEngineError, cli
from rlengine.testing import testing_plugin, tiny_config

EXAMPLES = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, os.pardir, "examples")
EPISODE_LENGTH = 4  # the counting env's default


def kit_plugins():
    return {"extra_plugins": [("testing", testing_plugin())]}


def run_main(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("rlengine: error: ")
    return lines[0]


# -- a run of the testing kit (no first-party plugin needed) ---------------------
@pytest.fixture(scope="module")
def toy_run(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("toy") / "run")
    Engine(tiny_config(root, num_env_steps=64), **kit_plugins()).train()
    return root


def test_eval_of_a_run_directory_scores_the_restored_policy(toy_run):
    metrics = open_run(toy_run, **kit_plugins()).evaluate(num_episodes=3)

    assert metrics["eval/episodes"] == 3
    assert metrics["eval/average_length"] == EPISODE_LENGTH
    # reward is 1 + action per step, so a return lies in [4, 8]; the trained toy prefers action 1
    assert EPISODE_LENGTH < metrics["eval/average_return"] <= 2 * EPISODE_LENGTH


def test_play_reports_every_episode_in_order(toy_run):
    seen = []
    episodes = play_run(toy_run, 3, on_episode=lambda i, e: seen.append(i), **kit_plugins())

    assert seen == [0, 1, 2]
    assert [e.length for e in episodes] == [EPISODE_LENGTH] * 3
    assert all(EPISODE_LENGTH <= e.episode_return <= 2 * EPISODE_LENGTH for e in episodes)


def test_play_record_of_an_env_that_cannot_render_names_it(toy_run, tmp_path):
    with pytest.raises(RLEngineError, match=r"environment 'counting' \(CountingEnv\) cannot render.*without --record"):
        play_run(toy_run, 1, record=str(tmp_path / "out.gif"), **kit_plugins())
    assert not (tmp_path / "out.gif").exists()


@pytest.fixture(scope="module")
def graph_run(tmp_path_factory):
    """The same task on the testing kit's graph environment (``graph-counting``)."""
    root = str(tmp_path_factory.mktemp("graph") / "run")
    Engine(tiny_config(root, env="graph-counting", num_env_steps=64), **kit_plugins()).train()
    return root


def test_eval_play_and_export_take_a_graph_environment_run(graph_run, tmp_path):
    metrics = open_run(graph_run, **kit_plugins()).evaluate(num_episodes=3)
    assert metrics["eval/episodes"] == 3 and metrics["eval/average_length"] == EPISODE_LENGTH
    episodes = play_run(graph_run, 2, **kit_plugins())
    assert [e.length for e in episodes] == [EPISODE_LENGTH] * 2
    with pytest.raises(RLEngineError, match=r"environment 'graph-counting' \(GraphCountingEnv\) cannot render"):
        play_run(graph_run, 1, record=str(tmp_path / "out.gif"), **kit_plugins())
    export_run(graph_run, str(tmp_path / "model"), **kit_plugins())
    assert tf.saved_model.load(str(tmp_path / "model")) is not None


def test_export_loads_in_process_and_matches_the_evaluator(toy_run, tmp_path):
    out = str(tmp_path / "model")
    info = export_run(toy_run, out, **kit_plugins())
    policy = tf.saved_model.load(out)
    observations = np.array([[0, 0], [1, 1], [3, 0]], np.float32)
    engine = open_run(toy_run, **kit_plugins())
    with engine.restored() as components:
        expected = components.algorithm.predict(
            components.envs[0].reset()._replace(observation=observations[:2]), ()).action.numpy()

    assert info["stateful"] is False and not hasattr(policy, "step")
    assert policy.action(observations).numpy().tolist() == [expected[0]] * 3
    assert json.load(open(os.path.join(out, "signature.json")))["action"] == {
        "shape": [None], "dtype": "int32", "minimum": 0, "maximum": 1}
    assert "policy.action(observation)" in open(os.path.join(out, "README.txt")).read()


# -- --checkpoint best|latest|N ------------------------------------------------------------------------
def run_tool(capsys, *argv):
    """What ``rlengine ...`` does, with the testing kit's plugins (the toy run's env and algorithm)."""
    from rlengine.plugin.manager import build_plugins

    plugins = build_plugins(extra_plugins=[("testing", testing_plugin())])
    commands, words = cli.commands_of(plugins), [str(a) for a in argv]
    args = cli.parser(commands).parse_args(words)
    args.plugins, args.argv = plugins, words
    try:
        code = commands[args.command].run(args)
    except Exception as exc:
        code = cli.report(exc, words, False)
    out, err = capsys.readouterr()
    return code, out, err


def test_eval_of_the_best_checkpoint_names_its_iteration_and_return(capsys, toy_run):
    # the toy's evaluations at iterations 2, 4, 6 and 8 all score 8: the first is the best, ckpt-8 the newest
    code, out, err = run_tool(capsys, "eval", toy_run, "--checkpoint", "best", "--episodes", 2, "--json")
    result = json.loads(out)
    _, text, _ = run_tool(capsys, "eval", toy_run, "--checkpoint", "best", "--episodes", 2)

    assert code == 0, err
    assert {k: result[k] for k in ("checkpoint", "iteration", "checkpoint_eval_return", "episodes")} == {
        "checkpoint": "best/ckpt-2", "iteration": 2, "checkpoint_eval_return": 8.0, "episodes": 2}
    assert f"2 episodes of {toy_run} (best checkpoint of iteration 2, which scored 8.00 in training): mean " in text


def test_eval_of_an_iteration_number_and_of_one_not_kept(capsys, toy_run):
    code, out, _ = run_tool(capsys, "eval", toy_run, "--checkpoint", 8, "--json")
    assert code == 0 and json.loads(out)["checkpoint"] == "ckpt-8"
    assert json.loads(out)["checkpoint_eval_return"] is None

    code, _, err = run_tool(capsys, "eval", toy_run, "--checkpoint", 5)
    assert code == 2 and one_line_error(err) == (
        f"rlengine: error: {toy_run!r} has no sound checkpoint of iteration 5 (kept: 8, 2): use one of those, "
        "latest or best")


def test_play_says_which_checkpoint_it_plays(capsys, toy_run):
    code, out, err = run_tool(capsys, "play", toy_run, "--checkpoint", "latest")
    assert code == 0, err
    assert out.splitlines()[0] == f"rlengine: playing {toy_run} (checkpoint of iteration 8)"


def test_export_of_the_best_checkpoint_records_it(capsys, toy_run, tmp_path):
    out = tmp_path / "model"
    code, text, err = run_tool(capsys, "export", toy_run, out, "--checkpoint", "best")
    signature = json.load(open(out / "signature.json"))

    assert code == 0, err
    assert f"of {toy_run} (best checkpoint of iteration 2, which scored 8.00 in training) to {out};" in text
    assert {k: signature[k] for k in ("checkpoint", "iteration", "eval_return")} == {
        "checkpoint": "best/ckpt-2", "iteration": 2, "eval_return": 8.0}
    assert json.load(open(out / "rlengine-export.json"))["checkpoint"] == "best/ckpt-2"
    assert "exported from best/ckpt-2 (the best checkpoint: evaluation return 8.00 in training)." in \
        (out / "README.txt").read_text()
    assert export_run(toy_run, str(out), checkpoint="8", **kit_plugins())["eval_return"] is None  # replaced


@pytest.mark.parametrize("command", ["eval", "play", "export"])
def test_a_checkpoint_that_is_no_choice_is_refused_before_anything_is_built(capsys, toy_run, tmp_path, command):
    args = [command, toy_run, *([tmp_path / "out"] if command == "export" else []), "--checkpoint", "worst"]
    code, _, err = run_main(capsys, *args)  # without the testing kit: the toy run could not even be built

    assert code == 2 and one_line_error(err) == (
        "rlengine: error: --checkpoint 'worst' is not a choice: use latest, best or an iteration number "
        "(e.g. --checkpoint best)")
    assert not (tmp_path / "out").exists()


def test_export_refuses_a_directory_that_is_not_an_earlier_export(toy_run, tmp_path):
    (tmp_path / "notes.txt").write_text("keep me")
    with pytest.raises(RLEngineError, match="is not an earlier export: choose a new or empty directory"):
        export_run(toy_run, str(tmp_path), **kit_plugins())
    assert (tmp_path / "notes.txt").read_text() == "keep me"


# -- errors: one line naming the path and the fix ---------------------------------
@pytest.mark.parametrize("command", [["eval"], ["play"], ["export"]])
def test_a_missing_root_dir_is_one_line_naming_it(capsys, tmp_path, command):
    missing = tmp_path / "nope"
    args = [*command, missing] + ([tmp_path / "out"] if command == ["export"] else [])
    code, _, err = run_main(capsys, *args)

    line = one_line_error(err)
    assert code == 2
    assert f"run directory {str(missing)!r} does not exist" in line and "rlengine train" in line


def test_a_directory_without_config_toml_is_not_a_run_directory(capsys, tmp_path):
    code, _, err = run_main(capsys, "eval", tmp_path)

    assert code == 2
    assert f"{str(tmp_path)!r} is not an rlengine run directory (no config.toml)" in one_line_error(err)


def test_a_run_without_a_checkpoint_says_to_train_first(toy_run, tmp_path):
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    shutil.copy(os.path.join(toy_run, "config.toml"), fresh / "config.toml")

    expected = r"no checkpoint in '.*fresh/checkpoints' yet: train first \(rlengine train --root-dir .*fresh\)"
    with pytest.raises(RLEngineError, match=expected) as err:
        open_run(str(fresh), **kit_plugins()).evaluate()
    assert "\n" not in str(err.value)


def test_plot_of_a_run_without_metrics_jsonl_names_the_writer(capsys, toy_run, tmp_path):
    code, _, err = run_main(capsys, "plot", toy_run, "--out", tmp_path / "c.png")  # the toy run wrote no jsonl

    line = one_line_error(err)
    assert code == 2
    assert f"{toy_run!r} has no metrics.jsonl" in line and "train.writers" in line
    assert not (tmp_path / "c.png").exists()


@pytest.mark.parametrize("name", ["out.avi", "out"])
def test_an_unknown_record_extension_is_refused_before_anything_runs(capsys, toy_run, tmp_path, name):
    code, _, err = run_main(capsys, "play", toy_run, "--record", tmp_path / name)

    line = one_line_error(err)
    assert code == 2
    assert f"cannot record to {str(tmp_path / name)!r}: unknown extension" in line and ".gif or .mp4" in line


def test_eval_episodes_must_be_positive(capsys, toy_run):
    code, _, err = run_main(capsys, "eval", toy_run, "--episodes", "0")
    assert code == 2 and "--episodes must be at least 1, got 0" in one_line_error(err)


def test_plot_of_an_unknown_metric_suggests_close_ones(capsys, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.jsonl").write_text(json.dumps({"env_steps": 8, "wall_time": 1.0, "eval/average_return": 3}) + "\n")
    code, _, err = run_main(capsys, "plot", run, "--out", tmp_path / "c.png", "--metric", "eval/average_retrun")

    line = one_line_error(err)
    assert code == 2 and "metric 'eval/average_retrun'" in line and "Did you mean 'eval/average_return'" in line


# -- a PPO CartPole run through the command line ---------------------------------
@pytest.fixture(scope="module")
def cartpole_run(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("cartpole") / "ppo-cartpole")
    overrides = ["train.num_env_steps=512", "train.eval_interval=1", "train.num_eval_episodes=2",
                 'train.writers=["jsonl"]', f"train.root_dir={json.dumps(root)}"]
    Engine(os.path.join(EXAMPLES, "ppo_cartpole.toml"), overrides).train()
    return root


@pytest.mark.first_party
def test_cli_eval_prints_episodes_mean_and_std(capsys, cartpole_run):
    code, out, _ = run_main(capsys, "eval", cartpole_run, "--episodes", 3, "--json")
    result = json.loads(out)
    code_text, text, _ = run_main(capsys, "eval", cartpole_run, "--episodes", 3)

    assert code == code_text == 0
    assert result["episodes"] == 3 and result["root_dir"] == cartpole_run
    assert 8 <= result["mean_return"] <= 500 and result["std_return"] >= 0
    # the same seed gives the same episodes
    assert f"mean return {result['mean_return']:.2f}, std {result['std_return']:.2f}" in text


@pytest.mark.first_party
def test_cli_eval_of_the_best_checkpoint_restores_the_best_evaluation(capsys, cartpole_run):
    rows = [json.loads(line) for line in open(os.path.join(cartpole_run, "metrics.jsonl"))]
    scores = [(row["eval/average_return"], row["iteration"]) for row in rows if "eval/average_return" in row]
    best_score = max(score for score, _ in scores)
    first_best = min(iteration for score, iteration in scores if score == best_score)  # ties keep the first
    code, out, err = run_main(capsys, "eval", cartpole_run, "--checkpoint", "best", "--episodes", 2, "--json")
    result = json.loads(out)

    assert code == 0, err
    assert result["checkpoint"] == f"best/ckpt-{first_best}" and result["iteration"] == first_best
    assert result["checkpoint_eval_return"] == best_score


@pytest.mark.first_party
def test_cli_play_records_a_gif_of_every_step(capsys, cartpole_run, tmp_path):
    from PIL import Image

    out = tmp_path / "play.gif"
    code, text, err = run_main(capsys, "play", cartpole_run, "--episodes", 2, "--record", out, "--fps", 50)
    lengths = [int(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith("episode ")]

    assert code == 0, err
    assert len(lengths) == 2 and all(n >= 8 for n in lengths)
    with Image.open(out) as gif:
        size = gif.size
        durations = []
        for index in range(gif.n_frames):
            gif.seek(index)
            durations.append(gif.info["duration"])
    assert size == (600, 400)
    # One frame after reset, one per step, one for the restart between the episodes, 20 ms each
    # (the GIF writer merges identical neighbours into one longer frame).
    assert sum(durations) == 20 * (1 + sum(lengths) + 1)


@pytest.mark.first_party
def test_cli_play_records_an_mp4(capsys, cartpole_run, tmp_path):
    import imageio.v3 as iio

    out = tmp_path / "play.mp4"
    code, text, err = run_main(capsys, "play", cartpole_run, "--record", out)
    length = int(next(line for line in text.splitlines() if line.startswith("episode ")).rsplit(" ", 1)[1])
    frames = iio.imread(out, plugin="FFMPEG")  # through imageio-ffmpeg, as written

    assert code == 0, err
    assert frames.shape == (1 + length, 400, 600, 3)


@pytest.mark.first_party
def test_cli_plot_overlays_runs_in_two_panels(capsys, cartpole_run, tmp_path):
    from PIL import Image

    other = tmp_path / "second-run"
    shutil.copytree(cartpole_run, other)
    out = tmp_path / "curve.png"
    code, text, err = run_main(capsys, "plot", cartpole_run, other, "--out", out)

    assert code == 0, err
    assert "2 runs, 4 curves" in text  # evaluation and training return of each run
    with Image.open(out) as image:
        assert image.size == (1200, 450)
        colours = set(image.convert("RGB").getdata())
    # matplotlib's first two cycle colours draw the two runs
    assert (31, 119, 180) in colours and (255, 127, 14) in colours


def write_metrics(path, rows, torn_tail=""):
    path.mkdir()
    text = "".join(json.dumps(row) + "\n" for row in rows) + torn_tail
    (path / "metrics.jsonl").write_text(text)


def test_plot_continues_wall_time_across_resumes_and_skips_a_torn_row(capsys, tmp_path):
    from rlengine_tools.plot import load_curves

    rows = [{"env_steps": 8 * i, "wall_time": t, "train/episode_return": float(i)}
            for i, t in enumerate([1.0, 2.0, 0.5, 1.5], 1)]  # the third row is from a resumed process
    rows[1]["eval/average_return"] = 5.0
    write_metrics(tmp_path / "resumed", rows, torn_tail='{"env_steps": 40, "wall_')
    curves = {c.metric: c.points for c in load_curves([str(tmp_path / "resumed")], "eval/average_return")}

    assert curves["train/episode_return"] == [(8, 1.0, 1.0), (16, 2.0, 2.0), (24, 2.5, 3.0), (32, 3.5, 4.0)]
    assert curves["eval/average_return"] == [(16, 2.0, 5.0)]
    code, text, err = run_main(capsys, "plot", tmp_path / "resumed", "--out", tmp_path / "c.svg")
    assert code == 0, err
    assert "1 run, 2 curves" in text and (tmp_path / "c.svg").read_text().startswith("<?xml")


def test_a_foreign_config_toml_is_named_with_its_path(capsys, tmp_path):
    (tmp_path / "config.toml").write_text('[server]\nport = 80\n')
    code, _, err = run_main(capsys, "eval", tmp_path)

    line = one_line_error(err)
    assert code == 2
    assert f"{tmp_path / 'config.toml'}: config section [server] matches no loaded plugin" in line
