"""The box2d and mujoco extras: one line naming the extra when missing, and their envs through the plugin.

The missing-extra tests hide the module (``None`` in ``sys.modules`` makes its
import fail, as for a package that is not installed) and drop Gymnasium's
cached env modules, so ``gymnasium.make`` imports them again and raises its
``DependencyNotInstalled``. They run whether or not the extras are installed;
the smoke tests are skipped without them.
"""

from __future__ import annotations

import builtins
import importlib.util
import sys

import numpy as np
import pytest
from rlengine_gym.config import GymConfig
from rlengine_gym.environment import GymEnvironment

from rlengine import ConfigError, StepType
from rlengine.cli import main
from rlengine.plugin import manager
from rlengine.testing import testing_plugin

BOX2D_FIX = 'install it with: pip install "rlengine-gym[box2d]"'
MUJOCO_FIX = 'install it with: pip install "rlengine-gym[mujoco]"'


def hide_module(monkeypatch, module: str, env_package: str) -> None:
    """Make ``import module`` fail and forget the already imported modules of ``env_package``."""
    monkeypatch.setitem(sys.modules, module, None)
    for name in [n for n in sys.modules if n == env_package or n.startswith(env_package + ".")]:
        monkeypatch.delitem(sys.modules, name)


def gym_env(env_id: str, num_envs: int = 1, **config) -> GymEnvironment:
    return GymEnvironment(env_id, num_envs, 0, 0, GymConfig(**config))


# -- a missing extra is one line ---------------------------------------------------------------------
def test_missing_box2d_is_one_line_through_the_cli(monkeypatch, capsys, tmp_path):
    hide_module(monkeypatch, "Box2D", "gymnasium.envs.box2d")
    for name in ("RLENGINE_DEBUG", manager.DISABLE_ENV, manager.TRACE_ENV):
        monkeypatch.delenv(name, raising=False)
    real_build = manager.build_plugins

    def build(disabled=(), extra_plugins=(), load_entry_points=True):  # the toy algorithm: no algorithm plugin
        return real_build(disabled, [("testing", testing_plugin()), *extra_plugins], load_entry_points)

    monkeypatch.setattr(manager, "build_plugins", build)
    status = main(["train", "--algorithm", "toy", "--env", "LunarLander-v3", "--num-env-steps", "32",
                   "--root-dir", str(tmp_path / "run"), "--set", 'train.writers=["memory"]'])
    lines = capsys.readouterr().err.strip().splitlines()
    assert status == 2
    assert lines[-1] == ("rlengine: error: environment 'LunarLander-v3' needs Box2D, which is not installed; "
                         + BOX2D_FIX)
    assert not any("Traceback" in line for line in lines)


@pytest.mark.parametrize("env_id", ["LunarLanderContinuous-v3", "BipedalWalker-v3", "CarRacing-v3"])
def test_every_box2d_env_names_the_box2d_extra(monkeypatch, env_id):
    hide_module(monkeypatch, "Box2D", "gymnasium.envs.box2d")
    with pytest.raises(ConfigError) as err:
        gym_env(env_id)
    assert str(err.value) == f"environment {env_id!r} needs Box2D, which is not installed; {BOX2D_FIX}"


def test_missing_pygame_of_box2d_envs_names_the_module_and_the_extra(monkeypatch):
    # Every Box2D env needs pygame: gymnasium.envs.box2d imports CarRacing, which draws its observations.
    hide_module(monkeypatch, "pygame", "gymnasium.envs.box2d")
    with pytest.raises(ConfigError) as err:
        gym_env("LunarLander-v3")
    assert str(err.value) == ("environment 'LunarLander-v3' needs the module 'pygame' (part of the box2d extra), "
                              f"which is not installed; {BOX2D_FIX}")


@pytest.mark.parametrize("vectorization", ["sync", "async"])
def test_missing_mujoco_is_one_line_naming_the_extra(monkeypatch, vectorization):
    hide_module(monkeypatch, "mujoco", "gymnasium.envs.mujoco")
    with pytest.raises(ConfigError) as err:
        gym_env("HalfCheetah-v5", vectorization=vectorization)
    assert str(err.value) == f"environment 'HalfCheetah-v5' needs MuJoCo, which is not installed; {MUJOCO_FIX}"


def test_a_broken_install_says_it_cannot_be_imported(monkeypatch):
    hide_module(monkeypatch, "mujoco", "gymnasium.envs.mujoco")
    real_import = builtins.__import__

    def import_broken_mujoco(name, *args, **kwargs):
        if name == "mujoco":  # installed, but its library does not load
            raise ImportError("libmujoco.so.4.0.0: cannot open shared object file", name="mujoco._functions")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", import_broken_mujoco)
    with pytest.raises(ConfigError) as err:
        gym_env("Hopper-v5")
    assert str(err.value) == ("environment 'Hopper-v5' needs MuJoCo, which cannot be imported (ImportError: "
                              "libmujoco.so.4.0.0: cannot open shared object file); reinstall it with: "
                              'pip install "rlengine-gym[mujoco]"')


# -- the envs, with the extras installed ---------------------------------------------------------------
def needs(module: str, extra: str):
    missing = importlib.util.find_spec(module) is None
    return pytest.mark.skipif(missing, reason=f'needs {module}: pip install "rlengine-gym[{extra}]"')


ENVS = [
    pytest.param("LunarLander-v3", (8,), marks=needs("Box2D", "box2d")),
    pytest.param("BipedalWalker-v3", (24,), marks=needs("Box2D", "box2d")),
    pytest.param("HalfCheetah-v5", (17,), marks=needs("mujoco", "mujoco")),
]


def random_actions(env: GymEnvironment):
    spec, rng = env.action_spec(), np.random.default_rng(0)
    if not spec.shape:  # LunarLander-v3: Discrete(4)
        return lambda: rng.integers(0, int(spec.maximum) + 1, env.num_envs).astype(np.int32)
    return lambda: rng.uniform(spec.minimum, spec.maximum, (env.num_envs, *spec.shape)).astype(np.float32)


@pytest.mark.parametrize("vectorization", ["sync", "async"])
@pytest.mark.parametrize("env_id, obs_shape", ENVS)
def test_extra_envs_step_and_reset(env_id, obs_shape, vectorization):
    # A 3-step limit: the copies end their episodes and start new ones within the few steps taken.
    with gym_env(env_id, 2, vectorization=vectorization, max_episode_steps=3) as env:
        assert env.time_step_spec().observation.shape == obs_shape
        first = env.reset()
        assert first.observation.shape == (2, *obs_shape) and (first.step_type == StepType.FIRST).all()
        action = random_actions(env)
        steps = [env.step(action()) for _ in range(4)]
        assert all(np.isfinite(s.observation).all() and np.isfinite(s.reward).all() for s in steps)
        assert [s.step_type[0] for s in steps] == [StepType.MID, StepType.MID, StepType.LAST, StepType.FIRST]
        assert env.reset().step_type.tolist() == [StepType.FIRST] * 2


@pytest.mark.parametrize("env_id, obs_shape", ENVS)
def test_extra_envs_render_rgb_frames(env_id, obs_shape):
    # What `rlengine play --record` asks for (it keeps the run's vectorization, "sync" by default).
    with gym_env(env_id, 1, render_mode="rgb_array") as env:
        env.reset()
        env.step(random_actions(env)())
        frame = env.render()
        # MuJoCo draws in worker processes: with TensorFlow loaded, Mesa's software OpenGL crashes this one.
        assert env.vectorization == ("async" if env_id == "HalfCheetah-v5" else "sync")
    assert frame.ndim == 3 and frame.shape[2] == 3 and frame.dtype == np.uint8 and frame.std() > 0
