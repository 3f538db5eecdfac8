"""Environments of the old gym package (0.26 and 0.21 API) through shimmy: [gym] legacy, module:Name-v0 ids."""

import importlib.util
import subprocess
import sys

import numpy as np
import pytest
from rlengine_gym.environment import GymConfig, GymEnvironment

from rlengine import ConfigError, StepType

FIRST, MID, LAST = StepType.FIRST, StepType.MID, StepType.LAST

pytestmark = pytest.mark.skipif(importlib.util.find_spec("gym") is None or importlib.util.find_spec("shimmy") is None,
                                reason='the legacy extra is not installed (pip install "rlengine-gym[legacy]")')


def step_types(env_id, vectorization, steps, **config):
    env = GymEnvironment(env_id, 2, 10, config=GymConfig(vectorization=vectorization, **config))
    first = env.reset()
    rows = [env.step(np.ones(2, np.int32)) for _ in range(steps)]
    env.close()
    return first, rows


@pytest.mark.parametrize("vectorization", ["sync", "async"])
@pytest.mark.parametrize("name", ["LegacyCounter-v0", "LegacyCounterV21-v0"])
def test_a_module_that_registers_with_gym_is_made_through_shimmy(name, vectorization):
    first, rows = step_types(f"legacy_env_module:{name}", vectorization, 6)
    np.testing.assert_array_equal(first.observation, [[0, 10], [0, 11]])  # copy i seeded seed + i
    assert [r.step_type[0] for r in rows] == [MID, MID, MID, LAST, FIRST, MID]
    assert [r.discount[0] for r in rows] == [1, 1, 1, 0, 1, 1]  # terminated after episode_length = 4
    assert [r.reward[0] for r in rows] == [2, 2, 2, 2, 0, 2]


@pytest.mark.parametrize("name", ["LegacyCounter-v0", "LegacyCounterV21-v0"])
def test_the_gym_step_limit_and_its_override_truncate(name):
    _, rows = step_types(f"legacy_env_module:{name}", "sync", 7, make_kwargs={"episode_length": 50})
    assert [r.step_type[0] for r in rows] == [MID] * 5 + [LAST, FIRST]  # the id's limit: 6 steps
    assert rows[5].discount[0] == 1.0
    _, rows = step_types(f"legacy_env_module:{name}", "sync", 3, max_episode_steps=2,
                         make_kwargs={"episode_length": 50})
    assert [r.step_type[0] for r in rows] == [MID, LAST, FIRST]


def test_legacy_true_makes_the_id_with_gym():
    env = GymEnvironment("CartPole-v1", 2, 0, config=GymConfig(legacy=True, max_episode_steps=3))
    assert env.vectorization == "sync"  # gym's CartPole, made one copy at a time
    assert type(env._venv.envs[0].unwrapped.gym_env.unwrapped).__module__ == "gym.envs.classic_control.cartpole"
    env.reset()
    rows = [env.step(np.zeros(2, np.int32)) for _ in range(4)]
    assert [r.step_type.tolist() for r in rows] == [[MID, MID], [MID, MID], [LAST, LAST], [FIRST, FIRST]]
    env.close()
    with pytest.raises(ConfigError, match="unknown gym environment id 'CartPol-v1'.*'CartPole-v1'"):
        GymEnvironment("CartPol-v1", 1, 0, config=GymConfig(legacy=True))


def test_missing_gym_is_one_line_naming_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "gym", None)  # import gym raises ImportError
    with pytest.raises(ConfigError) as info:
        GymEnvironment("CartPole-v1", 1, 0, config=GymConfig(legacy=True))
    message = str(info.value)
    assert "\n" not in message and 'pip install "rlengine-gym[legacy]"' in message


def test_gym_notice_is_kept_from_the_console(tmp_path):
    code = ("from rlengine_gym.env_ids import resolve_env_id; "
            "print(resolve_env_id('legacy_env_module:LegacyCounter-v0').id)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=str(tmp_path), env={**__import__("os").environ, "PYTHONPATH": _tests_dir()})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "LegacyCounter-v0"
    assert "Gym has been unmaintained" not in out.stderr


def _tests_dir() -> str:
    import os

    return os.path.dirname(os.path.abspath(__file__))
