"""EnvPoolEnvironment against the engine's conventions and Gymnasium's own CartPole-v1."""

import importlib

import gymnasium
import numpy as np
import pytest
import tensorflow as tf
from rlengine_envpool import environment as environment_module
from rlengine_envpool.config import EnvPoolConfig
from rlengine_envpool.environment import EnvPoolEnvironment, make_kwargs
from rlengine_envpool.task_ids import resolve_task

from rlengine import ConfigError, FrameStack, SpecMismatchError, StepType

COPIES = 8


def balancing(observation):
    """Pushes the cart under the falling pole: the even copies look at its speed too and reach the 500 steps'
    limit, the odd ones fail within about a hundred steps."""
    speed = np.where(np.arange(len(observation)) % 2 == 0, 0.3, 0.0)
    return (observation[:, 2] + speed * observation[:, 3] > 0).astype(np.int32)


def _run(env, steps, policy=balancing):
    time_steps = [env.reset()]
    for _ in range(steps):
        time_steps.append(env.step(policy(time_steps[-1].observation)))
    return time_steps


def _episodes(time_steps, copy):
    """(length, return, last discount) of each whole episode of ``copy``: FIRST, then MID steps, then LAST."""
    episodes, length, total = [], None, 0.0
    for ts in time_steps:
        kind, reward = int(ts.step_type[copy]), float(ts.reward[copy])
        if kind == StepType.FIRST:
            assert length is None and reward == 0.0 and ts.discount[copy] == 1.0 and ts.prev_action[copy] == 0
            length, total = 0, 0.0
            continue
        assert length is not None, "a MID or LAST step without a FIRST step before it"
        length, total = length + 1, total + reward
        if kind == StepType.LAST:
            episodes.append((length, total, float(ts.discount[copy])))
            length = None
    return episodes


def _check_cartpole_episodes(time_steps):
    ends = [e for copy in range(COPIES) for e in _episodes(time_steps, copy)]
    assert all(ret == length for length, ret, _ in ends)  # reward 1 per step: the return is the length
    assert all(discount == (1.0 if length == 500 else 0.0) for length, _, discount in ends)  # cut at 500: discount 1
    return sorted(length for length, _, _ in ends)


def test_cartpole_steps_as_gymnasiums_from_each_state():
    """From every state EnvPool reached, Gymnasium's CartPole-v1 steps to the same next state and end."""
    env, twin = EnvPoolEnvironment("envpool/CartPole-v1", COPIES, seed=3), gymnasium.make("CartPole-v1").unwrapped
    time_steps = _run(env, 700)
    env.close()
    for before, after in zip(time_steps, time_steps[1:]):
        for copy in np.flatnonzero(after.step_type != StepType.FIRST):
            twin.reset()
            twin.state = before.observation[copy].astype(np.float64)
            observation, _, terminated, _, _ = twin.step(int(after.prev_action[copy]))
            np.testing.assert_allclose(after.observation[copy], observation, rtol=1e-5, atol=1e-6)
            assert terminated == (after.discount[copy] == 0.0)
    lengths = _check_cartpole_episodes(time_steps)
    assert 500 in lengths and min(lengths) < 500  # both kinds of end were checked


def test_cartpole_episodes_have_the_structure_of_the_gymnasium_paths():
    """EnvPool seeds differ from Gymnasium's (its own generator), so the episodes are compared by their
    structure: FIRST and LAST placement, returns, truncation at 500 with discount 1, in both."""
    rlengine_gym = pytest.importorskip("rlengine_gym.environment")
    with EnvPoolEnvironment("envpool/CartPole-v1", COPIES, seed=0) as env:
        pool_lengths = _check_cartpole_episodes(_run(env, 1200))
    with rlengine_gym.GymEnvironment("CartPole-v1", COPIES, seed=0) as twin:
        gym_lengths = _check_cartpole_episodes(_run(twin, 1200))
    assert pool_lengths.count(500) and gym_lengths.count(500)


def test_copies_are_seeded_by_their_env_ids():
    """Copy i of env ids from first_env_id is seeded seed + first_env_id + i, as on the Gymnasium path."""
    whole = EnvPoolEnvironment("envpool/CartPole-v1", 4, seed=7).reset()
    tail = EnvPoolEnvironment("envpool/CartPole-v1", 2, seed=7, first_env_id=2).reset()
    np.testing.assert_array_equal(whole.observation[2:], tail.observation)
    assert list(tail.env_id) == [2, 3]
    again = EnvPoolEnvironment("envpool/CartPole-v1", 4, seed=7).reset()
    np.testing.assert_array_equal(whole.observation, again.observation)


def test_specs_match_the_gymnasium_paths():
    rlengine_gym = pytest.importorskip("rlengine_gym.environment")
    for task in ["CartPole-v1", "Pendulum-v1"]:
        with EnvPoolEnvironment(f"envpool/{task}", 2, 0) as env, rlengine_gym.GymEnvironment(task, 2, 0) as twin:
            assert env.time_step_spec() == twin.time_step_spec()
            assert env.action_spec() == twin.action_spec()
            np.testing.assert_array_equal(env.action_spec().maximum, twin.action_spec().maximum)


def test_mujoco_specs_and_steps():
    with EnvPoolEnvironment("envpool/HalfCheetah-v4", 3, 0, config={"num_threads": 1}) as env:
        assert env.time_step_spec().observation == tf.TensorSpec((17,), tf.float32)
        assert (env.action_spec().shape, env.action_spec().dtype) == ((6,), tf.float32)
        env.reset()
        ts = env.step(np.zeros((3, 6), np.float32))
        assert ts.observation.dtype == np.float32 and list(ts.step_type) == [StepType.MID] * 3
        with pytest.raises(SpecMismatchError, match=r"shape \(3, 6\)"):
            env.step(np.zeros((3, 5), np.float32))


def test_atari_frames_are_channels_last_and_a_lost_life_restarts_the_stack():
    with EnvPoolEnvironment("envpool/Breakout-v5", 2, 0) as env:
        assert env.time_step_spec().observation == tf.TensorSpec((84, 84, 4), tf.uint8)
        assert env.stacked_frames() == FrameStack(axis=-1, frames=4)
        rng, firsts = np.random.default_rng(0), 0
        ts = env.reset()
        for _ in range(400):
            first = ts.step_type == StepType.FIRST
            for frames in ts.observation[first]:  # every slot holds the episode's first frame
                assert all(np.array_equal(frames[..., k], frames[..., -1]) for k in range(4))
            firsts += int(first.sum())
            ts = env.step(rng.integers(0, 4, 2))
        assert firsts > 2  # episodes after lost lives, not only the reset's


def test_atari_training_loses_a_life_and_clips_evaluation_plays_the_raw_game():
    atari = resolve_task("envpool/Pong-v5")
    assert make_kwargs(atari, EnvPoolConfig()) == {"episodic_life": True, "reward_clip": True}
    assert make_kwargs(atari, EnvPoolConfig(make_kwargs={"reward_clip": False})) == {
        "episodic_life": True, "reward_clip": False}
    evaluation = EnvPoolConfig(make_kwargs={"reward_clip": True, "noop_max": 1}, evaluation=True)
    assert make_kwargs(atari, evaluation) == {"reward_clip": False, "noop_max": 1, "episodic_life": False}
    assert make_kwargs(resolve_task("envpool/CartPole-v1"), EnvPoolConfig(evaluation=True)) == {}
    with EnvPoolEnvironment("envpool/Pong-v5", 1, 0, config=evaluation) as env:
        config = env._pool.spec.config
        assert (config.episodic_life, config.reward_clip) == (False, False)


def test_the_state_cannot_be_saved_and_it_is_said_once(capsys):
    environment_module._said_no_state.discard("envpool/CartPole-v1")
    with EnvPoolEnvironment("envpool/CartPole-v1", 2, 0) as env:
        for _ in range(2):
            with pytest.raises(NotImplementedError):
                env.state()
    assert capsys.readouterr().err.count("starts new episodes") == 1


@pytest.mark.parametrize("env_id, message", [
    ("envpool/CartPol-v1", r"unknown EnvPool task 'CartPol-v1'.*Did you mean 'envpool/CartPole-v1'.*"
                           r"atari \(envpool/.*mujoco.gym \(envpool/"),
    ("envpool", r"names no EnvPool task: use envpool/<task id>"),
])
def test_a_bad_id_is_one_line(env_id, message):
    with pytest.raises(ConfigError, match=message) as err:
        EnvPoolEnvironment(env_id, 2, 0)
    assert "\n" not in str(err.value)


def test_missing_envpool_names_the_pip_command(monkeypatch):
    real = importlib.import_module

    def without_envpool(name, *args):
        if name == "envpool":
            raise ImportError("No module named 'envpool'")
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", without_envpool)
    with pytest.raises(ConfigError, match=r"needs EnvPool.*install it with: pip install \"envpool>=1.2.5,<1.3\""):
        EnvPoolEnvironment("envpool/CartPole-v1", 2, 0)


@pytest.mark.parametrize("config, message", [
    ({"num_threads": -1}, r"num_threads must be an integer >= 0"),
    ({"make_kwargs": {"seed": 3}}, r"must not set 'seed'"),
    ({"make_kwargs": {"bogus": 1}}, r"cannot make EnvPool task 'CartPole-v1' with \[envpool\] make_kwargs"),
    ({"threads": 2}, r"\[envpool\].*threads"),
])
def test_bad_settings_are_one_line(config, message):
    with pytest.raises(ConfigError, match=message):
        EnvPoolEnvironment("envpool/CartPole-v1", 2, 0, config=config)
