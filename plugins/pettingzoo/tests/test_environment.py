"""The rows a PettingZoo game gives the engine: specs, episodes, agents that leave early, padding, masks."""

import numpy as np
import pytest
import tiny_games
from rlengine_pettingzoo import environment as environment_module
from rlengine_pettingzoo.environment import PettingZooEnvironment

from rlengine import ConfigError, StepType

FIRST, MID, LAST = StepType.FIRST, StepType.MID, StepType.LAST


def test_simple_spread_rows_are_copies_times_agents_with_an_agent_id():
    with PettingZooEnvironment("mpe2/simple_spread_v3", 6, seed=3, first_env_id=6) as env:
        assert env.agents == ["agent_0", "agent_1", "agent_2"] and env.batch_size == 6
        assert env.time_step_spec().observation.shape == (18 + 3,)
        assert env.action_spec().shape == () and int(env.action_spec().maximum) == 4
        first = env.reset()
        assert (first.step_type == FIRST).all() and first.env_id.tolist() == list(range(6, 12))
        np.testing.assert_array_equal(first.observation[:, 18:], np.tile(np.eye(3), (2, 1)))
        kinds = [env.step(np.arange(6) % 5).step_type for _ in range(26)]
    assert all((k == MID).all() for k in kinds[:24])  # 25 steps per episode, every agent to the end
    assert (kinds[24] == LAST).all() and (kinds[25] == FIRST).all()


def test_copies_are_seeded_apart_and_reproducibly():
    def first_observation(seed, first_env_id):
        with PettingZooEnvironment("mpe2/simple_spread_v3", 3, seed=seed, first_env_id=first_env_id) as env:
            return env.reset().observation

    np.testing.assert_array_equal(first_observation(1, 0), first_observation(1, 0))
    assert not np.array_equal(first_observation(1, 0), first_observation(1, 3))


def test_num_envs_must_be_whole_games_but_evaluation_rounds_up():
    with pytest.raises(ConfigError, match=r"train.num_envs = 4 counts agent rows.*multiple of 3 \(e.g. 6\)"):
        PettingZooEnvironment("mpe2/simple_spread_v3", 4, seed=0)
    with PettingZooEnvironment("mpe2/simple_spread_v3", 4, seed=0, config={"evaluation": True}) as env:
        assert env.batch_size == env.num_envs == 6


def test_make_kwargs_reach_the_game():
    with PettingZooEnvironment("mpe2/simple_spread_v3", 4, seed=0, config={"make_kwargs": {"N": 2}}) as env:
        assert env.agents == ["agent_0", "agent_1"] and env.time_step_spec().observation.shape == (12 + 2,)
    with pytest.raises(ConfigError, match="make_kwargs"):
        PettingZooEnvironment("mpe2/simple_spread_v3", 3, seed=0, config={"make_kwargs": {"colour": 1}})


@pytest.fixture
def tiny(monkeypatch):
    monkeypatch.setattr(environment_module, "resolve_module", lambda env_id: tiny_games)
    env = PettingZooEnvironment("pettingzoo/tiny_v0", 6, seed=0)
    yield env
    env.close()


def test_the_tiny_game_passes_pettingzoos_own_parallel_api_test():
    from pettingzoo.test import parallel_api_test

    parallel_api_test(tiny_games.TinyGame(), num_cycles=10)


def test_agents_that_leave_early_give_first_rows_until_their_game_is_over(tiny):
    quitter, short, stayer = 0, 1, 2
    assert tiny.time_step_spec().observation.shape == (3 + 3,)  # the longest observation, then the agent id
    tiny.reset()
    steps = [tiny.step(np.ones(6, np.int32)) for _ in range(5)]
    kinds = np.array([s.step_type[:3] for s in steps])
    np.testing.assert_array_equal(kinds[:, quitter], [MID, LAST, FIRST, FIRST, FIRST])
    np.testing.assert_array_equal(kinds[:, stayer], [MID, MID, MID, LAST, FIRST])
    assert steps[1].discount[quitter] == 0 and steps[3].discount[stayer] == 1  # terminated / truncated
    idle = steps[2]
    assert idle.reward[quitter] == 0 and idle.prev_action[quitter] == 0 and not idle.observation[quitter].any()
    assert steps[2].prev_action[stayer] == 1 and steps[4].prev_action[stayer] == 0  # a reset ignores actions
    np.testing.assert_array_equal(steps[0].reward[:3], [1, 11, 21])
    np.testing.assert_array_equal(steps[0].observation[short], [1, 1, 0, 0, 1, 0])  # padded, then its id


def as_module(game_class):
    return type("m", (), {"parallel_env": staticmethod(game_class)})


def test_discrete_action_spaces_of_different_sizes_share_the_largest_each_agent_masked(monkeypatch):
    from pettingzoo.test import parallel_api_test

    parallel_api_test(tiny_games.MixedActionsGame(), num_cycles=10)
    monkeypatch.setattr(environment_module, "resolve_module", lambda env_id: as_module(tiny_games.MixedActionsGame))
    with PettingZooEnvironment("pettingzoo/mixed_v0", 6, seed=0) as env:
        spec = env.time_step_spec().observation
        assert env.action_spec().maximum == 2 and set(spec) == {"observation", "action_mask"}
        assert spec["observation"].shape == (3 + 3,) and spec["action_mask"].dtype.name == "int8"
        first = env.reset()
        np.testing.assert_array_equal(first.observation["action_mask"][:3], [[1, 1, 0], [1, 1, 1], [1, 1, 0]])
        step = env.step(np.array([1, 2, 1, 1, 2, 1], np.int32))  # 2 only where it is allowed: the game refuses others
        np.testing.assert_array_equal(step.reward[:3], [1, 12, 21])
        np.testing.assert_array_equal(step.observation["observation"][1], [1, 2, 0, 0, 1, 0])  # padded, its id
        later = [env.step(np.ones(6, np.int32)) for _ in range(2)]
        quitter_idle = later[-1].observation["action_mask"][0]
        np.testing.assert_array_equal(quitter_idle, [1, 0, 0])  # out of the game: action 0 only


@pytest.mark.parametrize("variant", [{}, {"masks": True}, {"action_sizes": {"short": 3}, "masks": True}])
def test_every_variant_of_the_testing_game_passes_pettingzoos_own_parallel_api_test(variant):
    from pettingzoo.test import parallel_api_test
    from rlengine_pettingzoo.testing import TinyGame

    parallel_api_test(TinyGame(**variant), num_cycles=10)


def test_a_games_own_masks_of_different_lengths_are_padded_and_met_with_each_agents_actions(monkeypatch):
    monkeypatch.setattr(environment_module, "resolve_module",
                        lambda env_id: as_module(lambda: tiny_games.MixedActionsGame(masks=True)))
    with PettingZooEnvironment("pettingzoo/mixed_v0", 3, seed=0) as env:
        spec = env.time_step_spec().observation
        assert set(spec) == {"observation", "action_mask", "agent_id"} and spec["observation"].shape == (3,)
        first = env.reset()
        np.testing.assert_array_equal(first.observation["action_mask"], [[1, 1, 0], [1, 1, 1], [1, 1, 0]])
        odd = env.step(np.array([1, 2, 1], np.int32))
        np.testing.assert_array_equal(odd.observation["observation"][1], [1, 2, 0])  # short's 2 numbers, padded
        np.testing.assert_array_equal(odd.observation["action_mask"], [[1, 0, 0], [1, 1, 0], [1, 0, 0]])
        assert tiny_games.TinyGame.refused == []


def test_a_mask_whose_length_is_not_its_agents_action_count_is_refused_by_name(monkeypatch):
    class WrongMask(tiny_games.TinyGame):  # equal action spaces, but one agent's mask is a move short
        def observation_space(self, agent):
            space = super().observation_space(agent)
            if agent == "short":
                return tiny_games.spaces.Dict({**space.spaces, "action_mask": tiny_games.spaces.Box(0, 1, (1,), np.int8)})
            return space

    monkeypatch.setattr(environment_module, "resolve_module", lambda env_id: as_module(lambda: WrongMask(masks=True)))
    with pytest.raises(ConfigError, match=r"'pettingzoo/wrong_v0': agent 'short' has an action_mask of shape \(1,\) "
                                          r"for its action space Discrete\(2\); a mask has one entry per action \(2\)"):
        PettingZooEnvironment("pettingzoo/wrong_v0", 3, seed=0)


def test_agents_with_discrete_and_box_action_spaces_are_refused_by_name(monkeypatch):
    class Mixed(tiny_games.TinyGame):
        def action_space(self, agent):
            if agent == "short":
                return tiny_games.spaces.Box(-1.0, 1.0, (1,), np.float32)
            return tiny_games.spaces.Discrete(2)

    monkeypatch.setattr(environment_module, "resolve_module", lambda env_id: as_module(Mixed))
    with pytest.raises(ConfigError, match="'pettingzoo/mixed_v0': its agents have different action spaces"):
        PettingZooEnvironment("pettingzoo/mixed_v0", 3, seed=0)


def test_connect_four_is_played_turn_by_turn_against_random_legal_moves():
    with PettingZooEnvironment("pettingzoo/classic.connect_four_v3", 4, seed=0) as env:
        spec = env.time_step_spec().observation
        assert set(spec) == {"observation", "action_mask", "agent_id"} and spec["action_mask"].shape == (7,)
        ts, rng, seats, results = env.reset(), np.random.default_rng(0), [], []
        for _ in range(120):
            seats.extend(ts.observation["agent_id"].argmax(1)[ts.step_type == FIRST])
            legal = [rng.choice(np.flatnonzero(m)) for m in ts.observation["action_mask"]]
            ts = env.step(np.array(legal))
            assert not ts.reward[ts.step_type != LAST].any()  # a game pays at its end only
            results.extend(ts.reward[ts.step_type == LAST])
    assert set(results) <= {-1, 0, 1} and {-1, 1} <= set(results) and len(results) > 10
    assert abs(np.mean(seats) - 0.5) < 0.2  # the learner plays first and second


@pytest.mark.parametrize("env_id, message", [
    ("mpe2/simple_sprad_v3", "Did you mean 'mpe2/simple_spread_v3'"),
    ("pettingzoo/classic.conect_four_v3", "Did you mean 'pettingzoo/classic.connect_four_v3'"),
    ("pettingzoo/clasic.chess_v6", "'pettingzoo' has no family 'clasic'"),
])
def test_unknown_ids_say_what_is_known(env_id, message):
    with pytest.raises(ConfigError, match=message):
        PettingZooEnvironment(env_id, 3, seed=0)


def test_global_state_is_the_games_state_beside_every_agents_row():
    with PettingZooEnvironment("mpe2/simple_spread_v3", 6, seed=0, config={"global_state": True}) as env:
        spec = env.time_step_spec().observation
        assert spec["observation"].shape == (21,) and spec["global_state"].shape == (54,)
        env.reset()
        obs = env.step(np.zeros(6, np.int32)).observation
        games = env._games.games
    for c in range(2):
        state = obs["global_state"][3 * c: 3 * c + 3]
        np.testing.assert_allclose(state, np.tile(games[c].state(), (3, 1)), rtol=1e-6)
    assert not np.allclose(obs["global_state"][0], obs["global_state"][3])


def test_a_game_without_a_state_joins_its_agents_observations(monkeypatch):
    monkeypatch.setattr(environment_module, "resolve_module", lambda env_id: tiny_games)
    with PettingZooEnvironment("pettingzoo/tiny_v0", 3, seed=0, config={"global_state": True}) as env:
        assert env.time_step_spec().observation["global_state"].shape == (3 + 2 + 3,)
        env.reset()
        steps = [env.step(np.ones(3, np.int32)).observation for _ in range(3)]
    np.testing.assert_array_equal(steps[0]["global_state"][2], [1, 1, 0, 1, 1, 1, 1, 2])
    assert not steps[2]["global_state"][0].any()  # the quitter's finished row: zeros
    np.testing.assert_array_equal(steps[2]["global_state"][2], [0, 0, 0, 3, 1, 3, 1, 2])  # it left: zeros in its place


def test_a_turn_based_game_that_cannot_be_parallel_is_refused_with_the_fix():
    with pytest.raises(ConfigError, match=r"connect_four_v3' is turn-based.*api = \"turns\""):
        PettingZooEnvironment("pettingzoo/classic.connect_four_v3", 2, seed=0, config={"api": "parallel"})
