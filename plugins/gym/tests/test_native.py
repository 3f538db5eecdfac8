"""vectorization = "native": the engine's steps through a native vector env are those of SyncVectorEnv."""

import inspect

import gymnasium
import numpy as np
import pytest
import vector_counter_module
from gymnasium.envs.registration import load_env_creator
from gymnasium.utils import seeding
from rlengine_gym.environment import GymConfig, GymEnvironment
from rlengine_gym.native import native_obstacle
from rlengine_gym.vector_envs import choose_vectorization

from rlengine import ConfigError

#: Every id registered with a native vector env here (the test ids of vector_counter_module aside).
NATIVE_IDS = sorted(env_id for env_id, spec in gymnasium.registry.items()
                    if spec.vector_entry_point is not None and not env_id.startswith("rlengine-test/"))


class SyncCopiesDraws:
    """The random draws of a numpy vector env made as the copies of SyncVectorEnv make them.

    The vector env draws the start of every copy it resets from one generator, in one call of
    ``uniform(low, high, size=(..., copies))``; SyncVectorEnv's copy ``i`` draws its own from a
    generator seeded ``seed + i``. Handed to the vector env as its ``np_random``, this answers
    each call with those copies' own draws: the first call (the reset) for every copy, each later
    one for the copies whose episode ended on the previous step (``prev_done``).
    """

    def __init__(self, seed: int):
        self.seed, self.streams, self.venv = seed, [], None

    def uniform(self, low, high, size):
        copies = range(size[-1]) if self.venv is None else np.flatnonzero(self.venv.prev_done)
        while len(self.streams) < size[-1] or len(self.streams) < len(self.venv.prev_done if self.venv else []):
            self.streams.append(seeding.np_random(self.seed + len(self.streams))[0])
        draws = [self.streams[i].uniform(low, high, size=size[:-1]) for i in copies]
        return np.stack(draws, axis=-1) if draws else np.empty(size)


def rollout(env_id, vectorization, steps=300, num_envs=8, seed=5, **config):
    """The engine's time steps of ``steps`` random actions (the same for every vectorization)."""
    env = GymEnvironment(env_id, num_envs, seed, config=GymConfig(vectorization=vectorization, **config))
    assert env.vectorization == vectorization
    actions = np.random.default_rng(0).integers(0, 2, size=(steps, num_envs)).astype(np.int32)
    rows = [env.reset()] + [env.step(a) for a in actions]
    env.close()
    return rows


def episodes(rows):
    """Per copy, the (return, length, discount at LAST) of each episode that ended."""
    found = [[] for _ in rows[0].step_type]
    totals = np.zeros(len(found))
    lengths = np.zeros(len(found), int)
    for ts in rows[1:]:
        first = ts.step_type == 0
        totals[first], lengths[first] = 0.0, 0
        totals[~first] += ts.reward[~first]
        lengths[~first] += 1
        for i in np.flatnonzero(ts.step_type == 2):
            found[i].append((totals[i], lengths[i], ts.discount[i]))
    return found


def assert_same_steps(native_rows, sync_rows):
    for field in ("step_type", "reward", "discount", "observation", "prev_action", "env_id"):
        np.testing.assert_array_equal(np.stack([getattr(r, field) for r in native_rows]),
                                      np.stack([getattr(r, field) for r in sync_rows]), err_msg=field)
    native_episodes, sync_episodes = episodes(native_rows), episodes(sync_rows)
    assert native_episodes == sync_episodes
    assert sum(map(len, sync_episodes)) > 2 * len(sync_episodes)  # several episodes ended in every copy


@pytest.mark.parametrize("env_id", NATIVE_IDS)
@pytest.mark.parametrize("max_episode_steps", [None, 30])
def test_native_steps_equal_sync_episode_by_episode(monkeypatch, env_id, max_episode_steps):
    spec = gymnasium.spec(env_id)
    obstacle = native_obstacle(spec, {})
    if obstacle is not None:
        pytest.skip(f"{env_id}: {obstacle}")
    vector_class = load_env_creator(spec.vector_entry_point)
    if "self.np_random" not in inspect.getsource(vector_class):  # e.g. JAX's random keys
        pytest.skip(f"{env_id}: its vector env does not draw from np_random, where the sync copies' draws go")
    draws = SyncCopiesDraws(seed=5)
    monkeypatch.setattr(vector_class, "np_random", property(lambda venv: draws), raising=False)
    original_reset = vector_class.reset

    def reset_then_watch(venv, **kwargs):
        result = original_reset(venv, **kwargs)
        draws.venv = venv  # later draws: the copies restarting
        return result

    monkeypatch.setattr(vector_class, "reset", reset_then_watch)
    native = rollout(env_id, "native", max_episode_steps=max_episode_steps)
    sync = rollout(env_id, "sync", max_episode_steps=max_episode_steps)
    assert_same_steps(native, sync)
    if max_episode_steps:
        assert any(d == 1.0 for copy in episodes(sync) for _, _, d in copy)  # truncations too


def test_cartpole_is_among_the_native_ids():
    assert {"CartPole-v0", "CartPole-v1"} <= set(NATIVE_IDS)


@pytest.mark.parametrize("mode", ["NextStep", "Disabled"])
@pytest.mark.parametrize("terminate", [True, False])
def test_autoreset_modes_give_the_steps_of_sync(mode, terminate):
    env_id = vector_counter_module.IDS[mode]
    native = rollout(env_id, "native", steps=40, num_envs=5, make_kwargs={"terminate": terminate})
    sync = rollout(env_id, "sync", steps=40, num_envs=5, make_kwargs={"terminate": terminate})
    assert_same_steps(native, sync)


def test_same_step_autoreset_is_refused_and_auto_takes_sync(capsys):
    env_id = vector_counter_module.IDS["SameStep"]
    with pytest.raises(ConfigError, match="same-step autoreset") as info:
        GymEnvironment(env_id, 2, 0, config=GymConfig(vectorization="native"))
    assert "\n" not in str(info.value) and '"sync"' in str(info.value)
    env = GymEnvironment(env_id, 2, 0)
    assert env.vectorization == "sync"
    env.close()


def test_auto_picks_native_where_it_can_honour_the_config():
    def chosen(env_id, **config):
        config = GymConfig(**config)
        kwargs = dict(config.make_kwargs, **({"render_mode": config.render_mode} if config.render_mode else {}))
        return choose_vectorization(env_id, gymnasium.spec(env_id), config, kwargs, preprocessed=False)

    assert GymConfig().vectorization == "auto"
    assert chosen("CartPole-v1") == "native"
    assert chosen("CartPole-v1", make_kwargs={"sutton_barto_reward": True}) == "native"
    assert chosen("CartPole-v1", render_mode="rgb_array") == "native"
    assert chosen("CartPole-v1", render_mode="human") == "sync"  # the vector env draws rgb_array only
    assert chosen("CartPole-v1", vectorization="sync") == "sync"
    assert chosen("Pendulum-v1") == "sync"
    assert "no native vector env" in native_obstacle(gymnasium.spec("Pendulum-v1"), {})
    assert "takes no 'unknown_kwarg'" in native_obstacle(gymnasium.spec("CartPole-v1"), {"unknown_kwarg": 1})


def test_native_state_resumes_the_episodes_in_progress():
    config = GymConfig(vectorization="native", max_episode_steps=40)
    actions = np.random.default_rng(1).integers(0, 2, size=(60, 4)).astype(np.int32)
    env = GymEnvironment("CartPole-v1", 4, 3, config=config)
    env.reset()
    for action in actions[:30]:
        env.step(action)
    saved = env.state()
    expected = [env.step(action) for action in actions[30:]]
    env.close()
    resumed = GymEnvironment("CartPole-v1", 4, 99, config=config)
    resumed.reset()
    resumed.restore_state(saved)
    got = [resumed.step(action) for action in actions[30:]]
    resumed.close()
    for a, b in zip(expected, got):
        np.testing.assert_array_equal(a.observation, b.observation)
        np.testing.assert_array_equal(a.step_type, b.step_type)
    sync = GymEnvironment("CartPole-v1", 4, 3, config=GymConfig(vectorization="sync"))
    sync.reset()
    with pytest.raises(NotImplementedError):  # a sync state is not a native one: episodes restart
        sync.restore_state(saved)
    sync.close()


def test_native_render_returns_the_first_copy_frame():
    env = GymEnvironment("CartPole-v1", 2, 0, config=GymConfig(vectorization="native", render_mode="rgb_array"))
    env.reset()
    frame = env.render()
    assert frame.shape == (400, 600, 3) and frame.dtype == np.uint8
    env.close()


def test_a_run_says_once_on_a_terminal_which_backend_steps_it(monkeypatch, capsys):
    import rlengine_gym.native

    monkeypatch.setattr(rlengine_gym.native, "_said", set())
    monkeypatch.setattr("sys.stderr.isatty", lambda: True)
    for _ in range(2):  # training and evaluation copies: one line
        GymEnvironment("CartPole-v1", 2, 0).close()
    lines = capsys.readouterr().err.splitlines()
    assert lines == ["rlengine: CartPole-v1: stepped by its native vector env CartPoleVectorEnv "
                     "(all copies in one array step)"]
    spec = gymnasium.spec("CartPole-v1")
    assert choose_vectorization("CartPole-v1", spec, GymConfig(), {"render_mode": "human"}, False) == "sync"
    assert capsys.readouterr().err.splitlines() == [
        "rlengine: CartPole-v1: stepped by SyncVectorEnv, not its native vector env: its vector env "
        "CartPoleVectorEnv cannot render 'human' ([gym] vectorization = \"auto\")"]
