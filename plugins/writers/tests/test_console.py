import pytest
from rlengine_writers.console_writer import ConsoleConfig, ConsoleWriter


def _row(i, **extra):
    return {
        "iteration": i,
        "env_steps": 100 * i,
        "wall_time": float(i),
        "train/episode_return": float(i),
        **extra,
    }


def test_lines_mode_throttles_but_always_prints_eval(tmp_path, capsys):
    writer = ConsoleWriter(str(tmp_path), ConsoleConfig(mode="lines", print_interval_secs=1000.0), 1000)
    writer.write(_row(1))  # the first row always prints
    writer.write(_row(2))  # throttled
    writer.write(_row(3, **{"eval/average_return": 42.5, "eval/std_return": 1.5}))
    writer.write(_row(4))  # throttled, shown on close
    writer.close()
    writer.close()
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 3, lines
    assert lines[0].startswith("iter 1 | steps 100/1000 (10.0%)") and "return 1" in lines[0]
    assert lines[1] == "iter 3 | steps 300/1000 (30.0%) | eval 42.5 (std 1.5)"
    assert "iter 4" in lines[2] and "eval" not in lines[2]
    assert "steps/s" in lines[2] and "ETA" in lines[2] and "return 4" in lines[2]


def test_lines_mode_without_interval_prints_every_row(tmp_path, capsys):
    writer = ConsoleWriter(str(tmp_path), ConsoleConfig(mode="lines", print_interval_secs=0))
    for i in range(1, 4):
        writer.write(_row(i))
    writer.close()
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(" | ")[0] for line in lines] == ["iter 1", "iter 2", "iter 3"]
    assert lines[0].split(" | ")[1] == "steps 100"  # no total known


def test_auto_mode_uses_lines_when_not_a_tty(tmp_path):
    assert ConsoleWriter(str(tmp_path), ConsoleConfig()).mode == "lines"


def test_bar_mode(tmp_path, capsys):
    writer = ConsoleWriter(str(tmp_path), ConsoleConfig(mode="bar"), total_env_steps=1000)
    writer.write({"iteration": 1, "env_steps": 100, "wall_time": 1.0})  # no return yet
    writer.write(_row(2))
    writer.write(_row(3, **{"eval/average_return": 7.0}))
    writer.flush()
    writer.close()
    writer.close()
    err = capsys.readouterr().err
    assert "300/1" in err and "eval=7" in err


def test_bar_mode_without_total(tmp_path, capsys):
    writer = ConsoleWriter(str(tmp_path), ConsoleConfig(mode="bar"))
    writer.write(_row(1))
    writer.close()
    assert "train" in capsys.readouterr().err


def test_config_validation():
    for kwargs in [{"mode": "fancy"}, {"print_interval_secs": -1.0}, {"print_interval_secs": "5"}]:
        with pytest.raises((TypeError, ValueError)):
            ConsoleConfig(**kwargs)
