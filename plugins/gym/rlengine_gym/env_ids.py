"""Environment ids: from the id a run names to the registered Gymnasium spec.

An id is a registered Gymnasium id (``CartPole-v1``), an Atari one (``ALE/Pong-v5``, whose
ids ``ale-py`` registers only when asked for), or ``module:Name-v0``, whose module is
imported first because importing it registers the id. An id of the old ``gym`` package
(``legacy``, or a module that registered it with gym) resolves through
:mod:`rlengine_gym.legacy`. An id that resolves to nothing is a
one-line ``ConfigError`` naming the registered ids closest to it, if any are close.
"""

from __future__ import annotations

import difflib
import importlib

import gymnasium

from rlengine import ConfigError
from rlengine_gym.atari import is_ale_id, register_ale
from rlengine_gym.legacy import legacy_spec, quiet_gym_before, registered_with_gym
from rlengine_gym.worker import split_env_id
from rlengine_gym.worker_faults import missing_dependency_error

__all__ = ["resolve_env_id"]


def resolve_env_id(env_id: str, legacy: bool = False) -> gymnasium.envs.registration.EnvSpec:
    """The registered spec of ``env_id`` (``module:`` prefix imported); ``ConfigError`` if unknown.

    ``legacy``: the id is one of the old ``gym`` package's (a spec that makes it through shimmy).
    """
    if not isinstance(env_id, str) or not env_id:
        raise ConfigError(f"the environment id must be a non-empty string, got {env_id!r}")
    module, name = split_env_id(env_id)
    if is_ale_id(env_id):
        try:
            register_ale()  # only now: non-Atari runs and `rlengine plugins` never load the emulator
        except ImportError as err:
            raise missing_dependency_error(env_id, err, "ale_py") from None
    if module:
        quiet_gym_before(module)
        try:
            importlib.import_module(module)
        except ImportError as err:
            if err.name == "gym":
                raise missing_dependency_error(env_id, err, "rlengine_gym.legacy") from None
            raise ConfigError(
                f"cannot import module {module!r} named by environment id {env_id!r}: {err}"
            ) from None
    if legacy or registered_with_gym(name):
        return legacy_spec(env_id)
    try:
        return gymnasium.spec(name)
    except gymnasium.error.Error:
        raise ConfigError(
            f"unknown Gymnasium environment id {env_id!r}.{_suggest(name)} Pass a registered id with "
            f"--env, or 'module:Name-v0' to import the module that registers it."
        ) from None


def _suggest(name: str) -> str:
    by_lower = {key.lower(): key for key in gymnasium.registry}
    matches = difflib.get_close_matches(name.lower(), list(by_lower), n=3, cutoff=0.6)
    if not matches:
        return ""
    return " Did you mean " + " or ".join(repr(by_lower[m]) for m in matches) + "?"
