"""Atari (``ALE/`` ids) through ``GymEnvironment``: preprocessing, training vs evaluation, missing extras."""

import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("ale_py", reason='needs ale-py: pip install "rlengine-gym[atari]"')
pytest.importorskip("cv2", reason='needs opencv: pip install "rlengine-gym[atari]"')

import tensorflow as tf  # noqa: E402
from rlengine_gym.config import GymConfig  # noqa: E402
from rlengine_gym.environment import GymEnvironment  # noqa: E402

from rlengine import ConfigError, FrameStack, StepType  # noqa: E402
from rlengine.config.loading import make_section  # noqa: E402

BREAKOUT = "ALE/Breakout-v5"
FIRST, MID, LAST = StepType.FIRST, StepType.MID, StepType.LAST


def atari(env_id=BREAKOUT, num_envs=1, seed=0, **config):
    return GymEnvironment(env_id, num_envs, seed, 0, GymConfig(**config))


def random_actions(env, seed=0):
    rng, high = np.random.default_rng(seed), int(env.action_spec().maximum) + 1
    return lambda: rng.integers(0, high, env.num_envs)


def test_breakout_observes_four_stacked_uint8_frames():
    with atari() as env:
        assert env.time_step_spec().observation == tf.TensorSpec((84, 84, 4), tf.uint8)
        assert env.stacked_frames() == FrameStack(axis=-1, frames=4)
        first = env.reset().observation
        assert first.shape == (1, 84, 84, 4) and first.dtype == np.uint8
        assert all((first[..., k] == first[..., 0]).all() for k in range(4))  # every slot: the first frame
        step = env.step(np.ones(1, np.int32)).observation
        np.testing.assert_array_equal(step[..., :3], first[..., 1:])  # shifted by one, the newest last


@pytest.mark.parametrize("vectorization", ["sync", "async"])
def test_random_play_in_both_vectorizations(vectorization):
    with atari(num_envs=2, vectorization=vectorization) as env:
        env.reset()
        act = random_actions(env)
        step_types = []
        for _ in range(150):
            time_step = env.step(act())
            assert time_step.observation.shape == (2, 84, 84, 4) and time_step.observation.dtype == np.uint8
            step_types.append(time_step.step_type)
        step_types = np.concatenate(step_types)
        assert set(step_types) == {FIRST, MID, LAST}  # random Breakout loses a life well within 150 steps


def _play(env, episodes, act=None, max_steps=3000):
    """Lives left at each LAST and FIRST step, until ``episodes`` episodes ended."""
    env.reset()
    act, at_last, at_first = act or random_actions(env), [], []
    for _ in range(max_steps):
        step_type = env.step(act()).step_type[0]
        lives = int(env.last_info["lives"][0])
        if step_type == LAST:
            at_last.append(lives)
        elif step_type == FIRST:
            at_first.append(lives)
        if len(at_last) == episodes:
            break
    return at_last, at_first


def test_training_ends_an_episode_per_life_and_continues_the_game():
    with atari() as env:
        at_last, at_first = _play(env, episodes=5)
    assert at_last == [4, 3, 2, 1, 0]  # one episode per life
    assert at_first == [4, 3, 2, 1]  # soft resets: the game went on, its lives were not restored


def test_evaluation_plays_whole_games():
    with atari(evaluation=True) as env:
        at_last, _ = _play(env, episodes=1)
    assert at_last == [0]


def test_evaluation_relaunches_play_after_a_lost_life():
    # Trained one life per episode, each begun by a FIRE press, a policy may never press FIRE itself:
    # without the press after a lost life the game would stall until its 27,000-step limit.
    never_fire = np.full(1, 3)  # LEFT, always
    with atari(evaluation=True) as env:
        at_last, _ = _play(env, episodes=1, act=lambda: never_fire, max_steps=1000)
    assert at_last == [0]


def _rewards(evaluation):
    with atari("ALE/SpaceInvaders-v5", evaluation=evaluation) as env:
        env.reset()
        act = random_actions(env)
        return np.concatenate([env.step(act()).reward for _ in range(130)])  # random play scores within it


def test_training_clips_rewards_and_evaluation_keeps_the_score():
    assert set(_rewards(evaluation=False)) == {0.0, 1.0}
    assert max(_rewards(evaluation=True)) >= 5.0  # an invader is worth 5 to 30 points


def test_max_episode_steps_counts_agent_steps():
    # Without the FIRE press after reset (itself an agent step of the game) every step is the agent's.
    with atari(evaluation=True, max_episode_steps=40, atari_fire_on_reset=False) as env:
        env.reset()
        steps = [env.step(np.ones(1, np.int32)) for _ in range(40)]
    assert [s.step_type[0] for s in steps[:-1]] == [MID] * 39
    assert steps[-1].step_type[0] == LAST and steps[-1].discount[0] == 1.0  # truncated, not terminated


def test_saved_state_resumes_the_games_exactly():
    with atari() as env:  # sticky actions and lives lost within the replayed steps
        env.reset()
        act = random_actions(env, seed=1)
        for _ in range(20):
            env.step(act())
        saved, actions = env.state(), [act() for _ in range(80)]
        first = [env.step(a) for a in actions]
        env.restore_state(saved)
        again = [env.step(a) for a in actions]
    assert any((s.step_type == LAST).any() for s in first)
    for one, two in zip(first, again):
        np.testing.assert_array_equal(one.observation, two.observation)
        np.testing.assert_array_equal(one.step_type, two.step_type)


def test_atari_false_gives_the_raw_game():
    with atari(atari=False) as env:
        assert env.time_step_spec().observation == tf.TensorSpec((210, 160, 3), tf.uint8)
        assert env.stacked_frames() is None


def test_render_returns_the_colour_game_frame():
    with atari(render_mode="rgb_array") as env:
        env.reset()
        env.step(np.ones(1, np.int32))
        frame = env.render()
    assert frame.shape == (210, 160, 3) and frame.dtype == np.uint8
    assert (frame[..., 0] != frame[..., 1]).any()  # colour, not the preprocessed gray


def test_missing_ale_py_is_one_line_naming_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ale_py", None)  # import ale_py now fails
    with pytest.raises(ConfigError) as err:
        atari()
    message = str(err.value)
    assert "\n" not in message and "'ALE/Breakout-v5' needs ale-py" in message
    assert 'pip install "rlengine-gym[atari]"' in message


def test_missing_opencv_is_one_line_naming_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "cv2", None)
    with pytest.raises(ConfigError, match=r'opencv-python-headless.*pip install "rlengine-gym\[atari\]"'):
        atari()


def test_bad_atari_config_is_refused():
    with pytest.raises(ConfigError, match="atari = true needs an Atari game"):
        atari("CartPole-v1", atari=True)
    with pytest.raises(ConfigError, match="'frameskip'.*atari_frame_skip"):
        atari(make_kwargs={"frameskip": 4})
    with pytest.raises(ConfigError, match="atari_frame_skip"):
        make_section("gym", GymConfig, {"atari_frame_skip": 0})
    with pytest.raises(ConfigError, match="atari"):
        make_section("gym", GymConfig, {"atari": "yes"})


def test_the_plugin_does_not_load_the_emulator_until_an_ale_id_is_used():
    # Also: the Atari modules that worker processes import leave TensorFlow out.
    code = ("import sys, rlengine_gym.plugin, rlengine_gym.config, rlengine_gym.atari; "
            "print(sorted({'ale_py', 'cv2', 'tensorflow'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
