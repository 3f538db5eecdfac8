"""The built-in opponents of turn-based games (random, lookahead) and evaluation against each of them."""

import numpy as np
import pytest
from rlengine_pettingzoo.environment import PettingZooEnvironment
from rlengine_pettingzoo.opponents import Lookahead

from rlengine import ConfigError, StepType
from rlengine.run.episodes import EpisodeStats
from rlengine.run.groups import RowGroups

connect_four_v3 = pytest.importorskip("pettingzoo.classic.connect_four_v3")
C4 = "pettingzoo/classic.connect_four_v3"


def position(*moves):
    """Connect four after ``moves`` (columns, player_0 first)."""
    game = connect_four_v3.env()
    game.reset(seed=0)
    for move in moves:
        game.step(move)
    return game


def lookahead_moves(game, seeds=range(8)) -> set:
    board = list(game.unwrapped.board)
    moves = {Lookahead().move(game, game.observe(game.agent_selection), np.random.default_rng(s)) for s in seeds}
    assert game.unwrapped.board == board  # tried on copies only
    return moves


def test_lookahead_takes_a_win_over_a_block_and_blocks_a_threat():
    # player_0 holds columns 0-2 of the bottom row: it wins with 3, and player_1 must block 3
    assert lookahead_moves(position(0, 6, 1, 6, 2, 5)) == {3}
    assert lookahead_moves(position(0, 6, 1, 6, 2)) == {3}
    # player_1 holds three of column 6 and player_0 threatens 3: player_1 wins rather than blocks
    assert lookahead_moves(position(0, 6, 1, 6, 2, 6, 5)) == {6}


def test_lookahead_plays_random_legal_moves_where_nothing_wins_or_threatens():
    assert lookahead_moves(position(), seeds=range(40)) == set(range(7))
    full = position(*[0] * 6)  # column 0 is full: never chosen
    assert 0 not in lookahead_moves(full, seeds=range(30))


@pytest.mark.thorough  # 24 games (about 6 s)
def test_lookahead_beats_a_random_learner_in_the_environment():
    """8 rows, the learner's moves random and legal: the lookahead opponent wins most games in both seats."""
    outcomes = []
    rng = np.random.default_rng(0)
    with PettingZooEnvironment(C4, 8, seed=0, config={"opponent": "lookahead"}) as env:
        ts = env.reset()
        while len(outcomes) < 24:
            ts = env.step(np.array([rng.choice(np.flatnonzero(m)) for m in ts.observation["action_mask"]]))
            outcomes += ts.reward[ts.step_type == StepType.LAST].tolist()
    assert np.mean(np.array(outcomes) < 0) >= 0.9  # the learner's losses: all 24 with this seed


@pytest.mark.thorough  # 50 games (about 6 s)
def test_lookahead_wins_most_of_fifty_games_against_random_moves():
    from rlengine_pettingzoo.opponents import RandomMoves

    wins = 0
    for game_number in range(50):
        game, rng = connect_four_v3.env(), np.random.default_rng(game_number)
        game.reset(seed=game_number)
        me = game.possible_agents[game_number % 2]
        players = {me: Lookahead(), game.possible_agents[1 - game_number % 2]: RandomMoves()}
        for agent in game.agent_iter():
            obs, reward, terminated, truncated, _ = game.last()
            wins += agent == me and (terminated or truncated) and reward > 0
            game.step(None if terminated or truncated else players[agent].move(game, obs, rng))
    assert wins >= 42  # 46 measured with these seeds


def test_evaluation_copies_meet_each_named_opponent_in_each_seat():
    config = {"evaluation": True, "eval_opponents": ["random", "lookahead"]}
    with PettingZooEnvironment(C4, 8, seed=0, config=config) as env:
        assert env.row_groups[:4] == [("player_0", "vs_random", "vs_random/player_0"),
                                      ("player_1", "vs_random", "vs_random/player_1"),
                                      ("player_0", "vs_lookahead", "vs_lookahead/player_0"),
                                      ("player_1", "vs_lookahead", "vs_lookahead/player_1")]
        groups = RowGroups.of([env], 8)
    stats = EpisodeStats(8, groups)
    stats.add(np.full((1, 8), StepType.LAST), np.array([[1, 1, -1, -1, 1, 0, -1, 1]], np.float32))
    metrics = stats.pop()
    assert (metrics["train/vs_random/win_rate"], metrics["train/vs_lookahead/loss_rate"]) == (0.75, 0.75)
    assert metrics["train/vs_random/player_1/draw_rate"] == 0.5
    with PettingZooEnvironment(C4, 2, seed=0, config={"evaluation": True, "opponent": "lookahead"}) as env:
        assert [groups[1] for groups in env.row_groups] == ["vs_lookahead", "vs_lookahead"]  # the training one
    with PettingZooEnvironment(C4, 2, seed=0) as env:
        assert env.row_groups == ["player_0", "player_1"]  # training rows: their seats alone


@pytest.mark.parametrize("section, message", [
    ({"opponent": "minimax"}, r"\[pettingzoo\] opponent must be one of 'random', 'lookahead', 'pool', got 'minimax'"),
    ({"eval_opponents": ["random", "best"]},
     r"\[pettingzoo\] eval_opponents must be a list of distinct opponents among 'random', 'lookahead', 'pool', got"),
    ({"eval_opponents": "random"}, r"eval_opponents must be a list"),
])
def test_an_unknown_opponent_is_refused_naming_the_key_and_the_choices(section, message):
    with pytest.raises(ConfigError, match=message):
        PettingZooEnvironment(C4, 2, seed=0, config=section)


@pytest.mark.thorough  # a short training run with two evaluations (about 10 s)
def test_evaluation_reports_win_rates_against_each_named_opponent_in_metrics_jsonl(tmp_path):
    import json

    from test_training import pettingzoo_plugins

    import rlengine

    pytest.importorskip("rlengine_algorithms", reason="PPO is the algorithms plugin's")
    raw = {"train": dict(algorithm="ppo", env=C4, num_envs=4, unroll_length=8, num_env_steps=64, eval_interval=1,
                         num_eval_episodes=8, seed=0, writers=["jsonl"], root_dir=str(tmp_path / "run")),
           "ppo": {"num_epochs": 1, "mini_batch_size": 0},
           "pettingzoo": {"eval_opponents": ["random", "lookahead"]}}
    rlengine.Engine(raw, extra_plugins=pettingzoo_plugins()).train()
    rows = [json.loads(line) for line in open(tmp_path / "run" / "metrics.jsonl")]
    evaluated = [r for r in rows if "eval/average_return" in r]
    assert evaluated
    for row in evaluated:
        for group in ("vs_random/", "vs_lookahead/", "vs_random/player_0/", "vs_lookahead/player_1/", "player_0/", ""):
            rates = [row[f"eval/{group}{rate}"] for rate in ("win_rate", "draw_rate", "loss_rate")]
            assert sum(rates) == pytest.approx(1.0)
        assert row["eval/vs_lookahead/loss_rate"] >= row["eval/vs_random/loss_rate"]
