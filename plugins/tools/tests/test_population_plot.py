"""``rlengine plot`` of a population (``tune --ray --pbt``): one line per member over its generations."""

from __future__ import annotations

import json

import pytest
from rlengine_tools import lineage, plot
from rlengine_tools.runs import read_rows

from rlengine import cli


def generation(path, evals):
    """A generation's run directory: its config and the eval rows ``(env_steps, return)``."""
    path.mkdir(parents=True)
    (path / "config.toml").write_text('[train]\nalgorithm = "ppo"\n')
    rows = [{"iteration": i, "env_steps": s, "wall_time": 1.0 * i, "eval/average_return": r}
            for i, (s, r) in enumerate(evals, 1)]
    (path / "metrics.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))


def population(tmp_path):
    """Member 1 exploited member 0 at 512 env steps: its gen-1 holds member 0's rows up to 512, then its own."""
    strong = [(256, 10.0), (512, 40.0)]
    generation(tmp_path / "member-0" / "gen-0", strong + [(768, 60.0), (1024, 80.0)])
    generation(tmp_path / "member-1" / "gen-0", [(256, 5.0), (512, 8.0)])
    generation(tmp_path / "member-1" / "gen-1", strong + [(768, 55.0), (1024, 70.0)])
    (tmp_path / "member-0" / "lineage.json").write_text(json.dumps([{"generation": 0, "env_steps": 0}]))
    (tmp_path / "member-1" / "lineage.json").write_text(json.dumps(
        [{"generation": 0, "env_steps": 0}, {"generation": 1, "env_steps": 512, "donor": "member-0/gen-0"}]))
    return tmp_path


def returns(rows):
    return [(r["env_steps"], r["eval/average_return"]) for r in rows]


def test_a_members_line_takes_each_generation_over_its_own_stretch(tmp_path):
    tune_dir = population(tmp_path)
    members, others = lineage.split_members(plot.run_dirs([tune_dir]))
    assert [m.rsplit("/", 1)[-1] for m in members] == ["member-0", "member-1"] and others == []
    # member 1: its own gen-0 up to the exploit at 512, then gen-1's rows after it (not the donor's copied ones)
    assert returns(lineage.member_rows(members[1], read_rows)) == [(256, 5.0), (512, 8.0), (768, 55.0), (1024, 70.0)]
    assert returns(lineage.member_rows(members[0], read_rows)) == [(256, 10.0), (512, 40.0), (768, 60.0),
                                                                     (1024, 80.0)]


@pytest.mark.thorough  # the CLI's first import of matplotlib: the root suite leaves it out for time
def test_plot_of_a_tune_dir_draws_a_line_per_member(capsys, tmp_path):
    tune_dir = population(tmp_path / "tune")
    out = tmp_path / "population.png"
    assert cli.main(["plot", str(tune_dir), "--out", str(out)]) == 0
    assert "2 members of a population, one line each" in capsys.readouterr().out
    assert out.stat().st_size > 0
    curves = plot.load_curves([], plot.EVAL_RETURN, members=lineage.split_members(plot.run_dirs([tune_dir]))[0])
    assert sorted(c.label for c in curves) == ["member-0", "member-1"]


def test_an_unreadable_lineage_is_one_warning_and_its_generations_are_plotted_as_runs(capsys, tmp_path):
    tune_dir = population(tmp_path / "tune")
    (tune_dir / "member-1" / "lineage.json").write_text("{not json")
    members, others = lineage.split_members(plot.run_dirs([tune_dir]))
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "member-1/lineage.json" in err and "runs of their own" in err
    assert len(members) == 1 and [o.rsplit("/", 2)[-2:] for o in others] == [["member-1", "gen-0"],
                                                                              ["member-1", "gen-1"]]


def test_a_generation_named_on_its_own_is_plotted_as_its_run(capsys, tmp_path):
    tune_dir = population(tmp_path / "tune")
    gen = tune_dir / "member-1" / "gen-1"
    members, others = lineage.split_members(plot.run_dirs([gen]), {str(gen)})
    assert members == [] and others == [str(gen)]
    curves = plot.load_curves(others, plot.EVAL_RETURN)
    assert [p[2] for p in curves[0].points] == [10.0, 40.0, 55.0, 70.0]  # the donor's rows, then its own
