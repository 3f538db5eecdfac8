"""Episode metrics per agent (``train/<agent>/episode_return``) and per seat with win/draw/loss rates."""

import json

import numpy as np
import pytest
import tiny_games
from rlengine_pettingzoo.environment import PettingZooEnvironment
from test_training import Iterations, pettingzoo_plugins, tiny_game_run

import rlengine
from rlengine import StepType
from rlengine.run.episodes import EpisodeStats
from rlengine.run.groups import RowGroups

pytest.importorskip("rlengine_algorithms", reason="PPO is the algorithms plugin's")


@pytest.mark.thorough  # a training run with evaluations (5 s); test_training's short run checks the keys
def test_each_agents_return_is_reported_under_its_name_in_training_and_evaluation(tmp_path, monkeypatch):
    """Rewards 0, 10 and 20 a step whatever the action: ``quitter`` leaves after 2 steps (0), ``short`` and
    ``stayer`` play 4 (40 and 80); the mean over the rows' episodes is 40."""
    raw = tiny_game_run(tmp_path, monkeypatch, tiny_games, "ppo", num_envs=6, unroll_length=5,
                        num_env_steps=120, eval_interval=4, num_eval_episodes=3)
    raw["ppo"] = {"num_epochs": 1, "mini_batch_size": 0}
    raw["pettingzoo"] = {"make_kwargs": {"action_pay": 0}}
    iterations = Iterations()
    rlengine.Engine(raw, extra_plugins=pettingzoo_plugins(iterations)).train()
    trained = [m for m in iterations.metrics if "train/episodes" in m]
    assert trained and all(m["train/episode_return"] == 40 for m in trained)
    assert all((m["train/quitter/episode_return"], m["train/short/episode_return"],
                m["train/stayer/episode_return"]) == (0, 40, 80) for m in trained)
    assert not any("win_rate" in key for m in trained for key in m)  # a Parallel game has no outcomes
    rows = [json.loads(line) for line in open(tmp_path / "run" / "metrics.jsonl")]
    evaluated = [r for r in rows if "eval/average_return" in r]
    assert evaluated and all((r["eval/quitter/average_return"], r["eval/short/average_return"],
                              r["eval/stayer/average_return"], r["eval/average_return"]) == (0, 40, 80, 40)
                             for r in evaluated)
    assert any(r.get("train/stayer/episode_return") == 80 for r in rows)  # written, not only shown to hooks


def test_a_turn_based_games_rows_are_its_seats_with_win_draw_and_loss_rates():
    """Connect four, random moves for the learner too: each row keeps its seat, and the rates are the
    shares of the last rewards' signs, per seat and over all."""
    with PettingZooEnvironment("pettingzoo/classic.connect_four_v3", 4, seed=0, first_env_id=1) as env:
        assert env.row_groups == ["player_1", "player_0", "player_1", "player_0"] and env.episode_outcomes
        stats = EpisodeStats(5, RowGroups.of([env], 5))
        ts, rng, ends = env.reset(), np.random.default_rng(0), []
        for _ in range(150):
            seats = ts.observation["agent_id"].argmax(1)
            ts = env.step(np.array([rng.choice(np.flatnonzero(m)) for m in ts.observation["action_mask"]]))
            stats.add(ts.step_type[None], ts.reward[None], env.copy_ids)
            ends += [(f"player_{seat}", reward) for seat, reward, kind in zip(seats, ts.reward, ts.step_type)
                     if kind == StepType.LAST]
    metrics = stats.pop()
    assert len(ends) == metrics["train/episodes"] > 20
    for prefix, mine in [("train/", ends), *[(f"train/{s}/", [e for e in ends if e[0] == s]) for s in
                                               ("player_0", "player_1")]]:
        last = np.array([reward for _, reward in mine])
        assert metrics[f"{prefix}win_rate"] == np.mean(last > 0) and metrics[f"{prefix}loss_rate"] == np.mean(last < 0)
        assert metrics[f"{prefix}draw_rate"] == np.mean(last == 0)
    assert {seat for seat, _ in ends} == {"player_0", "player_1"}
    assert 0 < metrics["train/win_rate"] < 1


def test_single_agent_environments_keep_their_metrics_alone():
    stats = EpisodeStats(2, RowGroups.of([object()], 2))
    stats.add(np.array([[StepType.MID, StepType.LAST]]), np.array([[1.0, 2.0]]))
    assert stats.groups is None and set(stats.pop()) == {"train/episode_return", "train/episode_length",
                                                         "train/episodes"}

