"""GraphEnvAsGymnasium: Gymnasium's own check_env passes, the spaces are the originals', and the
registered rlengine_tfenvs/* ids make it."""

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from rlengine_tfenvs import GraphEnvAsGymnasium
from rlengine_tfenvs.plugin import GRAPH_ENVIRONMENTS


@pytest.mark.parametrize("env_id", list(GRAPH_ENVIRONMENTS))
def test_adapter_passes_gymnasium_check_env_with_the_original_spaces(env_id):
    env = GraphEnvAsGymnasium(env_id)
    check_env(env, skip_render_check=True)
    original = gymnasium.make(env_id.removeprefix("tf/"))
    assert env.observation_space == original.observation_space
    assert env.action_space == original.action_space


def test_registered_id_makes_the_adapter_with_the_time_limit():
    env = gymnasium.make("rlengine_tfenvs/MountainCar-v0")
    assert env.spec.max_episode_steps == 200 and isinstance(env.unwrapped, GraphEnvAsGymnasium)
    env.reset(seed=3)
    steps, truncated = 0, False
    while not truncated:
        _, reward, terminated, truncated, _ = env.step(1)  # no push: never reaches the flag
        steps += 1
        assert reward == -1.0 and not terminated
    assert steps == 200


def test_reset_without_a_seed_starts_a_new_episode_and_seeds_repeat():
    env = GraphEnvAsGymnasium("tf/Pendulum-v1")
    first, _ = env.reset(seed=11)
    second, _ = env.reset()
    again, _ = env.reset(seed=11)
    assert not np.array_equal(first, second) and np.array_equal(first, again)
    assert np.array_equal(env.reset()[0], second)


def test_a_clear_error_when_the_id_is_unknown():
    with pytest.raises(ValueError, match="unknown graph environment 'tf/Nope-v0'"):
        GraphEnvAsGymnasium("tf/Nope-v0")
