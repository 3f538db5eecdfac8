"""The console shows the value function's explained variance when the algorithm reports it (PPO, A2C)."""

from rlengine_writers.console_writer import ConsoleConfig, ConsoleWriter


def _row(i, **extra):
    return {"iteration": i, "env_steps": 100 * i, "wall_time": float(i), "train/episode_return": 10.0, **extra}


def test_lines_show_the_latest_finite_explained_variance(tmp_path, capsys):
    writer = ConsoleWriter(str(tmp_path), ConsoleConfig(mode="lines", print_interval_secs=0), 1000)
    writer.write(_row(1))  # not reported (yet, or by this algorithm): not shown
    writer.write(_row(2, **{"diagnostics/explained_variance": 0.8765}))
    writer.write(_row(3, **{"diagnostics/explained_variance": float("nan")}))  # undefined: the last one stays
    writer.close()
    lines = capsys.readouterr().err.splitlines()
    assert "expl var" not in lines[0]
    assert lines[1].endswith("| return 10 | expl var 0.88") and lines[2].endswith("| expl var 0.88")


def test_bar_shows_the_explained_variance(tmp_path, capsys):
    writer = ConsoleWriter(str(tmp_path), ConsoleConfig(mode="bar"), total_env_steps=1000)
    writer.write(_row(1, **{"diagnostics/explained_variance": -0.25}))
    writer.close()
    assert "expl_var=-0.25" in capsys.readouterr().err
