"""PPO and DQN train on the rows of PettingZoo games unchanged: one shared policy (IPPO) or Q network."""

import importlib.metadata

import numpy as np
import pytest
import rlengine_pettingzoo.plugin
import tiny_games
from rlengine_pettingzoo import environment as environment_module
from rlengine_pettingzoo import turns

import rlengine
from rlengine import hookimpl

pytest.importorskip("rlengine_algorithms", reason="PPO and DQN are the algorithms plugin's")


def pettingzoo_plugins(*others) -> list:
    """The plugin in-process when it is not installed (its tests run from the checkout), and ``others``."""
    installed = any(e.name == "pettingzoo" for e in importlib.metadata.entry_points(group="rlengine"))
    return [*([] if installed else [("pettingzoo", rlengine_pettingzoo.plugin)]),
            *[(f"p{i}", p) for i, p in enumerate(others)]]


def tiny_game_run(tmp_path, monkeypatch, module, algorithm, **train):
    """The raw config of a run of the tiny game ``module`` (as ``pettingzoo/tiny_v0``) with ``algorithm``."""
    monkeypatch.setattr(environment_module, "resolve_module", lambda env_id: module)
    return {"train": dict(algorithm=algorithm, env="pettingzoo/tiny_v0", seed=0, writers=["jsonl"],
                          root_dir=str(tmp_path / "run"), **train)}


class Iterations:
    def __init__(self):
        self.metrics, self.observation_spec = [], None

    @hookimpl
    def rlengine_iteration_end(self, run, iteration, metrics):
        self.metrics.append(dict(metrics))
        self.observation_spec = run.algorithm.time_step_spec.observation


def _train(tmp_path, env, num_envs, unroll_length, num_env_steps, *plugins, seed=0, section=None, **ppo):
    raw = {"train": dict(algorithm="ppo", env=env, num_envs=num_envs, unroll_length=unroll_length,
                         num_env_steps=num_env_steps, eval_interval=0, seed=seed, writers=[],
                         root_dir=str(tmp_path / "run")),
           "ppo": {"num_epochs": 2, "mini_batch_size": 0, **ppo}, **(section or {})}
    engine = rlengine.Engine(raw, extra_plugins=pettingzoo_plugins(*plugins))
    return engine, engine.train()


def test_ppo_steps_simple_spread_one_row_per_agent(tmp_path):
    """450 agent steps: every row an agent, every episode 25 steps, the policy's input the agent's
    observation and its id."""
    iterations = Iterations()
    engine, result = _train(tmp_path, "mpe2/simple_spread_v3", 6, 25, 450, iterations)
    assert engine.environment_section()[0] == "mpe2" and result.env_steps == 450
    assert iterations.observation_spec.shape == (18 + 3,)
    episodes = [m for m in iterations.metrics if "train/episodes" in m]
    assert sum(m["train/episodes"] for m in episodes) == 12  # steps 25 and 51 (after a reset step) end 6 each
    assert all(m["train/episode_length"] == 25 for m in episodes)
    assert all(f"train/agent_{i}/episode_return" in m for m in episodes for i in range(3))  # one per agent
    returns = engine.evaluate(6)
    assert returns["eval/episodes"] == 6 and returns["eval/average_length"] == 25
    assert np.mean([returns[f"eval/agent_{i}/average_return"] for i in range(3)]) == pytest.approx(
        returns["eval/average_return"])  # 2 episodes of each agent


class LegalMoves:
    """Checks every move the learner makes in a turn-based game against the mask it was shown."""

    def __init__(self, monkeypatch):
        self.moves = 0
        original_reset, original_step = turns.TurnGames.reset, turns.TurnGames.step
        shown = {}

        def reset(games, seeded=False):
            out = original_reset(games, seeded)
            shown[id(games)] = out[3]["action_mask"]
            return out

        def step(games, actions):
            live = ~games.over
            masks = shown[id(games)]
            assert masks[np.arange(len(actions)), actions][live].all(), "an illegal move was chosen"
            self.moves += int(live.sum())
            out = original_step(games, actions)
            shown[id(games)] = out[3]["action_mask"]
            return out

        monkeypatch.setattr(turns.TurnGames, "reset", reset)
        monkeypatch.setattr(turns.TurnGames, "step", step)


@pytest.mark.thorough  # a training run: tox runs it in this plugin's env; the root suite leaves it out
def test_ppo_learns_connect_four_against_random_moves_and_never_plays_an_illegal_one(tmp_path, monkeypatch):
    legal = LegalMoves(monkeypatch)
    iterations = Iterations()
    engine, _ = _train(tmp_path, "pettingzoo/classic.connect_four_v3", 16, 32, 40_000, iterations,
                       learning_rate=3e-4, hidden_sizes=[128, 128])
    assert legal.moves > 30_000
    returns = [m["train/episode_return"] for m in iterations.metrics if "train/episode_return" in m]
    assert np.mean(returns[-10:]) > np.mean(returns[:10]) + 0.3  # wins +1, losses -1
    wins = {seat: [m[f"train/{seat}win_rate"] for m in iterations.metrics if f"train/{seat}win_rate" in m]
            for seat in ("", "player_0/", "player_1/")}
    print("win rates of the first and last 10 iterations, over all, first and second:",
          {seat: (round(float(np.mean(w[:10])), 3), round(float(np.mean(w[-10:])), 3)) for seat, w in wins.items()})
    assert np.mean(wins[""][-10:]) > np.mean(wins[""][:10]) + 0.15  # reached here: 0.47 to 0.69


#: Reached here: IPPO -19.9 (seed 1) and -20.4 (seed 2), MAPPO -22.3 (seed 1), random play -27.8.
IPPO_THRESHOLD, MAPPO_THRESHOLD = -22.0, -24.0
SPREAD_PPO = dict(num_epochs=10, mini_batch_size=600, learning_rate=7e-4, gamma=0.99, gae_lambda=0.95,
                  entropy_coef=0.01)


def _spread_return(tmp_path, seed, label, **options):
    """The greedy policy's mean per-agent return over 300 episodes after 150,000 agent steps (printed: -s)."""
    engine, _ = _train(tmp_path, "mpe2/simple_spread_v3", 48, 50, 150_000, seed=seed, **SPREAD_PPO, **options)
    returns = engine.evaluate(300)
    print(f"{label} on mpe2/simple_spread_v3, seed {seed}: {returns}")
    assert returns["eval/average_length"] == 25
    return returns["eval/average_return"]


# Random actions score -27.8 per agent and episode (100 seeded episodes, std 9.3); a fixed walk to one
# landmark each -15.8. The thresholds sit below what these runs reached here (docs/multi-agent.md).
@pytest.mark.thorough
@pytest.mark.parametrize("seed", [1, 2])
def test_ippo_beats_random_play_on_simple_spread(tmp_path, seed):
    assert _spread_return(tmp_path, seed, "IPPO") > IPPO_THRESHOLD


@pytest.mark.thorough
def test_mappo_beats_random_play_on_simple_spread(tmp_path):
    mappo = _spread_return(tmp_path, 1, "MAPPO", section={"mpe2": {"global_state": True}}, central_critic=True)
    assert mappo > MAPPO_THRESHOLD


#: Eight rows (4 copies x 2 agents). Reached here by DQN after 4,000 agent steps, seeds 0, 1 and 2: 8.0 (the most there is; random play 2.0,
#: and 0.0 without the agent id: one policy that cannot tell the agents apart plays the same action for both).
COOP_DQN = dict(hidden_sizes=[64], initial_collect_steps=500, exploration_fraction=0.3, target_update_period=100)


@pytest.mark.thorough  # 13-25 s of training
@pytest.mark.parametrize("seed", [0, 1])
def test_dqn_with_one_shared_q_network_learns_a_cooperative_game(tmp_path, monkeypatch, seed):
    coop = type("coop", (), {"parallel_env": staticmethod(tiny_games.CoopGame)})
    raw = tiny_game_run(tmp_path, monkeypatch, coop, "dqn", num_envs=8, unroll_length=4, num_env_steps=4000,
                        eval_interval=0)
    raw["train"]["seed"], raw["dqn"] = seed, COOP_DQN
    engine = rlengine.Engine(raw, extra_plugins=pettingzoo_plugins())
    engine.train()
    returns = engine.evaluate(100)
    assert returns["eval/average_length"] == tiny_games.COOP_LENGTH
    assert returns["eval/left/average_return"] > 7.5 and returns["eval/right/average_return"] > 7.5


#: (game's own masks, PPO's best returns to beat for short and stayer): best play 48 and 84, random legal play 44 and
#: 82 without masks; with them (the largest action masked out on odd steps) 46 and 82, random 43 and 81
MASKED_BEST = {False: (46, 83), True: (44.5, 81.5)}


@pytest.mark.thorough  # four short training runs
@pytest.mark.parametrize("masks", [False, True])
@pytest.mark.parametrize("algorithm,settings", [
    ("ppo", {"num_epochs": 4, "mini_batch_size": 0}),
    ("dqn", {"hidden_sizes": [32], "initial_collect_steps": 300, "exploration_fraction": 0.5}),
])
def test_agents_with_action_spaces_of_different_sizes_only_ever_play_their_own(tmp_path, monkeypatch, algorithm,
                                                                               settings, masks):
    """``short`` chooses among 3 actions, the others among 2, through one policy (and, with ``masks``, the game
    masks each agent's largest action on odd steps): the masks keep every agent to what it may play, in random
    warm-up, exploration and greedy play alike (the game records any other)."""
    game = type("mixed", (), {"parallel_env": staticmethod(lambda **kw: tiny_games.MixedActionsGame(masks=masks, **kw))})
    tiny_games.TinyGame.refused.clear()
    raw = tiny_game_run(tmp_path, monkeypatch, game, algorithm, num_envs=12, unroll_length=8, num_env_steps=3000,
                        eval_interval=0)
    raw[algorithm] = settings
    engine = rlengine.Engine(raw, extra_plugins=pettingzoo_plugins())
    engine.train()
    returns = engine.evaluate(24)
    assert tiny_games.TinyGame.refused == []
    if algorithm == "ppo":  # and PPO learns each agent's best allowed action, short's being one the others lack
        short, stayer = MASKED_BEST[masks]
        assert returns["eval/short/average_return"] > short and returns["eval/stayer/average_return"] > stayer
