"""Self-play: the pool of the run's own checkpoints as a turn-based game's opponent."""

import json

import numpy as np
import pytest
from rlengine_pettingzoo import pool as pool_module
from rlengine_pettingzoo.environment import PettingZooEnvironment
from rlengine_pettingzoo.opponents import RandomMoves
from rlengine_pettingzoo.pool import CheckpointPool, PoolPlayer

from rlengine import ConfigError

pytest.importorskip("pettingzoo.classic.connect_four_v3")
C4 = "pettingzoo/classic.connect_four_v3"


def checkpoints(run_dir, *iterations):
    """Marks of complete checkpoints (the files the pool reads the run's checkpoints from)."""
    directory = run_dir / "checkpoints"
    directory.mkdir(parents=True, exist_ok=True)
    for n in iterations:
        (directory / f"ckpt-{n}.complete").write_text("{}")
    (directory / "ckpt-999.index").write_text("")  # a checkpoint without its marker does not count


class Snapshot:
    """A stand-in for a loaded checkpoint: plays the rightmost legal column, or always ``column``."""

    def __init__(self, iteration, column=None):
        self.iteration, self.column, self.seen, self.greedy = iteration, column, [], set()

    def predict(self, observation, state=None, deterministic=True):
        self.seen.append(observation)
        self.greedy.add(deterministic)
        mask = observation["action_mask"]
        return np.int64(self.column if self.column is not None else np.flatnonzero(mask)[-1]), None


@pytest.mark.parametrize("key, value", [("pool_size", 0), ("pool_every", "2"), ("pool_every", True),
                                        ("pool_sampling", "best"), ("pool_moves", "argmax"),
                                        ("opponent", "pools"),
                                        ("eval_opponents", ["pool", "pool"])])
def test_bad_pool_settings_are_one_line_naming_the_key(key, value):
    with pytest.raises(ConfigError, match=rf"\[pettingzoo\] {key}") as err:
        PettingZooEnvironment(C4, 2, seed=0, config={key: value})
    assert "\n" not in str(err.value)


def test_a_pool_opponent_needs_the_run_directory():
    with pytest.raises(ConfigError, match="opponent \"pool\" plays the run's own checkpoints.*run_dir"):
        PettingZooEnvironment(C4, 2, seed=0, config={"opponent": "pool"})


def test_the_pool_is_the_newest_checkpoints_on_disk_at_its_multiples_each_loaded_once(tmp_path):
    loaded = []
    pool = CheckpointPool(str(tmp_path), size=3, every=10, load=lambda d, n: loaded.append(n) or Snapshot(n))
    assert pool.members() == [] and pool.pick("uniform", np.random.default_rng(0)) is None
    checkpoints(tmp_path, 5, 10, 20, 25, 30, 40)
    assert pool.members() == [40, 30, 20]  # 5 and 25 are no multiples of 10; 10 is past the size
    assert pool.pick("latest", np.random.default_rng(0)).policy.iteration == 40
    rng = np.random.default_rng(0)
    picked = [pool.pick("uniform", rng).policy.iteration for _ in range(60)]
    assert set(picked) == {20, 30, 40} and sorted(loaded) == [20, 30, 40]  # every member loaded once
    again = np.random.default_rng(0)
    assert [pool.pick("uniform", again).policy.iteration for _ in range(60)] == picked  # seeded: replayed
    checkpoints(tmp_path, 50)
    (tmp_path / "checkpoints" / "ckpt-20.complete").unlink()  # pruned by train.keep_checkpoints
    assert pool.members() == [50, 40, 30]
    assert pool.pick("latest", rng).policy.iteration == 50 and 20 not in pool._snapshots  # the old one let go


def _pool_game(tmp_path, monkeypatch, sampling="uniform", **config):
    monkeypatch.setattr(pool_module, "_load", lambda run_dir, n: Snapshot(n))
    return PettingZooEnvironment(C4, 4, seed=0, config={"opponent": "pool", "run_dir": str(tmp_path / "run"),
                                                        "pool_sampling": sampling, **config})


def test_before_the_first_checkpoint_the_pool_opponent_plays_random_moves(tmp_path, monkeypatch):
    """With no checkpoint yet, the same games as against the random opponent, move for move."""
    rng = np.random.default_rng(1)
    with _pool_game(tmp_path, monkeypatch) as pool_env, \
            PettingZooEnvironment(C4, 4, seed=0, config={"opponent": "random"}) as random_env:
        a, b = pool_env.reset(), random_env.reset()
        for _ in range(40):
            np.testing.assert_array_equal(a.observation["observation"], b.observation["observation"])
            moves = np.array([rng.choice(np.flatnonzero(m)) for m in a.observation["action_mask"]])
            a, b = pool_env.step(moves), random_env.step(moves)
        assert all(o.member is None for o in pool_env._games.opponents)


def test_a_pool_opponent_plays_its_snapshots_moves_from_its_own_seat_and_only_legal_ones(tmp_path, monkeypatch):
    checkpoints(tmp_path / "run", 4, 8)
    with _pool_game(tmp_path, monkeypatch, sampling="latest") as env:
        ts = env.reset()
        games = env._games
        assert all(o.member.policy.iteration == 8 for o in games.opponents)
        snapshot = games.opponents[1].member.policy
        # row 1 holds the second seat: the snapshot moved first, as player_0, to the rightmost column
        assert games.games[1].unwrapped.board[41] == 1
        # each move from the seat's own observation: its one-hot says which seat the snapshot plays
        assert [list(o["agent_id"]) for o in snapshot.seen] == [[1, 0]] * 2  # rows 1 and 3, as player_0
        ts = env.step(np.array([np.flatnonzero(m)[0] for m in ts.observation["action_mask"]]))
        assert [list(o["agent_id"]) for o in snapshot.seen[2:]] == [[0, 1], [1, 0]] * 2  # rows 0-3 in turn
        for _ in range(30):  # the learner plays its leftmost legal column, the snapshot its rightmost
            ts = env.step(np.array([np.flatnonzero(m)[0] for m in ts.observation["action_mask"]]))
        assert sum(o.unmasked for o in games.opponents) == 0 and snapshot.greedy == {True}
        legal = PoolPlayer(games.opponents[0].pool, "latest", games.layout, RandomMoves())
        legal.member = pool_module._Locked(Snapshot(8, column=0))
        game = games.games[0]
        game.reset(seed=0)
        for _ in range(6):
            game.step(0)  # column 0 full
        assert legal.move(game, game.observe(game.agent_selection), np.random.default_rng(0)) != 0
        assert legal.unmasked == 1  # the illegal choice was replaced with a legal random move


def test_sampled_pool_moves_come_from_the_snapshots_exploration_policy(tmp_path, monkeypatch):
    checkpoints(tmp_path / "run", 3)
    with _pool_game(tmp_path, monkeypatch, pool_moves="sampled") as env:
        env.reset()
        assert env._games.opponents[1].member.policy.greedy == {False}


@pytest.mark.thorough  # a self-play training run with its checkpoints loaded as opponents (about 30 s)
def test_a_self_play_ppo_run_on_connect_four_plays_its_checkpoints_and_reports_each_opponent(tmp_path, monkeypatch):
    pytest.importorskip("rlengine_algorithms", reason="PPO is the algorithms plugin's")
    from test_training import LegalMoves, pettingzoo_plugins

    import rlengine

    legal, players = LegalMoves(monkeypatch), []
    original_init = PoolPlayer.__init__

    def tracked(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        players.append(self)

    monkeypatch.setattr(PoolPlayer, "__init__", tracked)
    run_dir = tmp_path / "run"
    raw = {"train": dict(algorithm="ppo", env=C4, num_envs=8, unroll_length=32, num_env_steps=4096, seed=0,
                         eval_interval=8, num_eval_episodes=24, checkpoint_interval=2, checkpoint_seconds=0,
                         keep_checkpoints=8, writers=["jsonl"], root_dir=str(run_dir)),
           "ppo": {"num_epochs": 2, "mini_batch_size": 0},
           "pettingzoo": {"opponent": "pool", "pool_size": 3, "pool_every": 4, "pool_sampling": "uniform",
                          "eval_opponents": ["random", "lookahead", "pool"]}}
    rlengine.Engine(raw, extra_plugins=pettingzoo_plugins()).train()
    pool = pool_module._POOLS[(str(run_dir), 3, 4)]
    assert pool.members() == [16, 12, 8] and pool.loads >= 3  # 16 iterations, a member every 4
    played = {id(p.member.policy) for p in players if p.member is not None}
    assert played and sum(p.unmasked for p in players) == 0  # snapshots played, never against a mask
    assert legal.moves >= 4096
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    evaluations = [m for m in rows if "eval/win_rate" in m]
    assert len(evaluations) == 2
    for opponent in ("random", "lookahead", "pool"):
        for seat in ("", "player_0/", "player_1/"):
            assert 0 <= evaluations[-1][f"eval/vs_{opponent}/{seat}win_rate"] <= 1
    print({k: round(v, 3) for k, v in evaluations[-1].items() if k.startswith("eval/vs_") and "win_rate" in k})
