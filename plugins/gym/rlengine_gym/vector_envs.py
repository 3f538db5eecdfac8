"""The vector env that steps a run's copies: which kind (``[gym] vectorization``) and making it.

``"sync"`` (``SyncVectorEnv``, every copy in this process), ``"async"`` (``AsyncVectorEnv``, one
worker process per copy), ``"native"`` (the id's own vector env, :mod:`rlengine_gym.native`), or
``"auto"``: native where the id has a vector env that honours the other ``[gym]`` keys, sync
otherwise. MuJoCo copies that render always run in workers (:func:`draws_in_workers`). All are
made with the ``NEXT_STEP`` autoreset mode (a native env declares its own). A run says once on a
terminal which kind it uses, and for ``"auto"`` why not native where the id has a vector env.
"""

from __future__ import annotations

from collections.abc import Callable

import gymnasium
from gymnasium.envs.registration import EnvSpec
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv, VectorEnv

from rlengine import ConfigError
from rlengine_gym.config import GymConfig
from rlengine_gym.native import make_native, native_obstacle, say_once
from rlengine_gym.worker import entry_point_module, quiet_worker
from rlengine_gym.worker_faults import missing_dependency_error
from rlengine_gym.worker_start import START_METHOD, draws_in_workers, main_module_hidden, workers_need_main

__all__ = ["choose_vectorization", "make_vector_env"]


def choose_vectorization(env_id: str, spec: EnvSpec, config: GymConfig, make_kwargs: dict,
                         preprocessed: bool) -> str:
    """``"sync"``, ``"async"`` or ``"native"`` for ``env_id`` under ``config`` (``preprocessed``: Atari wrappers)."""
    if draws_in_workers(spec, config):
        return "async"
    if config.vectorization != "auto":
        return config.vectorization
    obstacle = native_obstacle(spec, make_kwargs)
    if obstacle is None and preprocessed:
        obstacle = "this plugin's Atari preprocessing wraps single copies"
    if obstacle is None:
        return "native"
    if spec.vector_entry_point is not None:  # a vector env exists: say why it is not used
        say_once(f'rlengine: {env_id}: stepped by SyncVectorEnv, not its native vector env: {obstacle} '
                 f'([gym] vectorization = "auto")')
    return "sync"


def make_vector_env(env_id: str, spec: EnvSpec, thunk: Callable, num_envs: int, make_kwargs: dict,
                    vectorization: str) -> VectorEnv:
    """The vector env of ``num_envs`` copies (each made by ``thunk``, or natively from ``spec``)."""
    try:
        if vectorization == "native":
            venv = make_native(spec, num_envs, make_kwargs)
        elif vectorization == "sync":
            venv = SyncVectorEnv([thunk] * num_envs, copy=False, autoreset_mode=AutoresetMode.NEXT_STEP)
        else:
            with main_module_hidden(not workers_need_main(thunk)):
                venv = AsyncVectorEnv([thunk] * num_envs, shared_memory=True, copy=False, context=START_METHOD,
                                      autoreset_mode=AutoresetMode.NEXT_STEP, worker=quiet_worker)
    except TypeError as err:
        raise ConfigError(f"cannot make environment {env_id!r} with arguments {make_kwargs}: {err}") from None
    except (gymnasium.error.DependencyNotInstalled, ImportError) as err:  # LunarLander without Box2D, ...
        raise missing_dependency_error(env_id, err, entry_point_module(spec)) from err
    say_once(f"rlengine: {env_id}: stepped by {_described(venv, vectorization)}")
    return venv


def _described(venv: VectorEnv, vectorization: str) -> str:
    if vectorization == "native":
        return f"its native vector env {type(venv.unwrapped).__name__} (all copies in one array step)"
    return {"sync": "SyncVectorEnv (every copy in this process)",
            "async": "AsyncVectorEnv (one worker process per copy)"}[vectorization]
