"""``rlengine tune --ray --pbt``: a population on Ray Tune's PBT scheduler, members copying each other's exact
checkpoints and continuing them with perturbed values, a lineage per member, best.toml."""

from __future__ import annotations

import glob
import json

import pytest
import tomllib

from rlengine.cli import main

pytest.importorskip("ray.tune", reason="rlengine tune --ray needs Ray Tune: pip install -e 'plugins/ray[tune]'")

pytestmark = pytest.mark.ray  # starts Ray processes: tox -e ray runs these


def _rows(run_dir) -> list:
    with open(run_dir / "metrics.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def test_a_population_exploits_the_better_members_checkpoint_and_goes_on_from_it(local_ray, tmp_path, capsys):
    tune_dir = tmp_path / "pbt"
    words = ["tune", "--ray", "--pbt", "--population", "2", "--perturb-interval", "512", "--num-env-steps", "1536",
             "--set", "train.eval_interval=1", "--set", "train.num_eval_episodes=2", "--seed", "0",
             "--param", "ppo.learning_rate=loguniform:1e-5:3e-3", "--tune-dir", str(tune_dir)]
    assert main(words) == 0
    out = capsys.readouterr().out
    assert "tune --pbt: 2 members" in out
    lineages = [json.loads(open(path, encoding="utf-8").read()) for path in glob.glob(str(tune_dir / "member-*" /
                                                                                         "lineage.json"))]
    assert len(lineages) == 2
    copies = [generation for lineage in lineages for generation in lineage[1:] if generation["donor"]]
    assert copies, "no member exploited another"
    for member in glob.glob(str(tune_dir / "member-*")):
        lineage = json.loads(open(f"{member}/lineage.json", encoding="utf-8").read())
        for generation in lineage[1:]:
            if not generation["donor"]:
                continue
            rows = [r for r in _rows(tmp_path / member / f"gen-{generation['generation']}")
                    if "train/episode_return" in r]
            started = generation["env_steps"]
            assert started in (512, 1024)  # a round's checkpoint was copied
            # the donor's rows up to its checkpoint, then this generation's, one iteration (256 steps) on
            assert [r["env_steps"] for r in rows if r["env_steps"] > started][0] == started + 256
            assert generation["values"]["ppo.learning_rate"] > 0
        last = lineage[-1]["generation"]
        assert _rows(tmp_path / member / f"gen-{last}")[-1]["env_steps"] == 1536  # each member ends at the budget
    best = tomllib.loads((tune_dir / "best.toml").read_text(encoding="utf-8"))
    assert 0 < best["ppo"]["learning_rate"] and best["train"]["root_dir"] == ""
    assert main(["plot", str(tune_dir), "--out", str(tmp_path / "population.png")]) == 0  # a line per member
    assert (tmp_path / "population.png").stat().st_size > 0
    assert "2 members of a population, one line each over its generations" in capsys.readouterr().out
