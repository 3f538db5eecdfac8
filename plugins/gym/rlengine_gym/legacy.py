"""Environments of the old ``gym`` package (0.21 or 0.26 API), run through shimmy.

An id is made with ``gym`` when ``[gym] legacy = true`` (``CartPole-v1`` then is gym's), or when
the module of a ``module:Name-v0`` id registered ``Name-v0`` with ``gym`` and not with Gymnasium.
:func:`legacy_spec` turns it into a Gymnasium spec whose entry point is :func:`make_legacy_env`,
so every vectorization and the ``[gym]`` keys work as for a Gymnasium id: the step limit is
Gymnasium's ``TimeLimit`` (gym's own is taken off), ``render_mode`` reaches the env.

One copy is ``shimmy.GymV26CompatibilityV0(env=gym.make(id, disable_env_checker=True))``; gym's
environment checker is off because it fails on NumPy 2. An env written for the 0.21 API (its
``reset`` takes no ``seed``) is built from its entry point and wrapped in
``shimmy.GymV21CompatibilityV0`` instead. gym's notice printed on import (that it is
unmaintained) is held back. Only gym, shimmy and Gymnasium are imported here (worker processes
of the async vectorization make copies with it).
"""

from __future__ import annotations

import contextlib
import difflib
import importlib
import importlib.util
import inspect
import io
import sys
import warnings
from typing import Any

import gymnasium
from gymnasium.envs.registration import EnvSpec

from rlengine import ConfigError
from rlengine_gym.worker import split_env_id
from rlengine_gym.worker_faults import install_command

__all__ = ["import_gym_quietly", "legacy_spec", "make_legacy_env", "registered_with_gym"]


def import_gym_quietly(env_id: str = "") -> Any:
    """The ``gym`` module, imported without its notice on stderr; ``ConfigError`` naming the extra when missing."""
    if sys.modules.get("gym") is not None:
        return sys.modules["gym"]
    try:
        with contextlib.redirect_stderr(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import gym
    except ImportError:
        what = f"environment {env_id!r}" if env_id else "[gym] legacy = true"
        raise ConfigError(f"{what} needs the old gym package, which is not installed; install it with: "
                          f"{install_command('legacy')}") from None
    return gym


def quiet_gym_before(module: str) -> None:
    """Import gym quietly before ``module`` does (a ``module:`` id's module may register with it), if installed."""
    if "gym" not in sys.modules and importlib.util.find_spec("gym") is not None:
        import_gym_quietly()


def registered_with_gym(name: str) -> bool:
    """Whether ``name`` is registered with an imported ``gym`` (and not with Gymnasium)."""
    gym = sys.modules.get("gym")
    return gym is not None and name not in gymnasium.registry and name in gym.envs.registry


def legacy_spec(env_id: str) -> EnvSpec:
    """A Gymnasium spec that makes ``env_id`` (``module:`` part imported already) with gym."""
    gym = import_gym_quietly(env_id)
    name = split_env_id(env_id)[1]
    if name not in gym.envs.registry:
        close = difflib.get_close_matches(name, list(gym.envs.registry), n=3, cutoff=0.6)
        hint = f" Did you mean {' or '.join(map(repr, close))}?" if close else ""
        raise ConfigError(f"unknown gym environment id {env_id!r} ([gym] legacy = true).{hint}")
    gym_spec = gym.envs.registry[name]
    return EnvSpec(id=name, entry_point=f"{__name__}:make_legacy_env", kwargs={"gym_id": env_id},
                   max_episode_steps=gym_spec.max_episode_steps, reward_threshold=gym_spec.reward_threshold)


def make_legacy_env(gym_id: str, render_mode: str | None = None, **kwargs: Any) -> gymnasium.Env:
    """One copy of the gym env ``gym_id`` as a Gymnasium env (the entry point of :func:`legacy_spec`)."""
    gym = import_gym_quietly(gym_id)
    module, name = split_env_id(gym_id)
    if module:  # a worker process registers the id too
        importlib.import_module(module)
    import shimmy

    spec = gym.envs.registry[name]
    if _old_api(gym, spec):
        env = gym.envs.registration.load(spec.entry_point)(**{**spec.kwargs, **kwargs})
        return shimmy.GymV21CompatibilityV0(env=env, render_mode=render_mode)
    if render_mode is not None:
        kwargs["render_mode"] = render_mode
    env = gym.make(name, disable_env_checker=True, **kwargs)
    if isinstance(env, gym.wrappers.TimeLimit):  # Gymnasium's TimeLimit counts the steps, overridable
        env = env.env
    return shimmy.GymV26CompatibilityV0(env=env)


def _old_api(gym: Any, spec: Any) -> bool:
    """Whether the env of a gym spec is written for the 0.21 API: its ``reset`` takes no ``seed``."""
    if spec.apply_api_compatibility:  # gym.make converts it itself
        return False
    entry_point = spec.entry_point
    creator = gym.envs.registration.load(entry_point) if isinstance(entry_point, str) else entry_point
    try:
        parameters = inspect.signature(creator.reset).parameters.values()
    except (AttributeError, TypeError, ValueError):
        return False
    return not any(p.name == "seed" or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)
