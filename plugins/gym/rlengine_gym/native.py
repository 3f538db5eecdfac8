"""Gymnasium's native vector environments: all copies of an id in one array-stepped env.

An id registered with a ``vector_entry_point`` (``CartPole-v1``: ``CartPoleVectorEnv``) can be
made as one vector env that steps every copy with array operations
(``gymnasium.make_vec(..., vectorization_mode="vector_entry_point")``), where ``SyncVectorEnv``
calls each copy's Python ``step`` in turn. :func:`native_obstacle` names what such an env
cannot honour (``vectorization = "auto"`` then takes ``SyncVectorEnv``).

Autoreset modes, as the vector env declares them in ``metadata["autoreset_mode"]``:

* ``NEXT_STEP``: the engine's own convention (the step after a copy's ``LAST`` ignores its
  action and returns the next episode's first observation); stepped as ``SyncVectorEnv`` is.
* ``DISABLED``: the engine resets the copies whose episode ended on the previous step itself
  (``reset(options={"reset_mask": ...})``) right after stepping them once more with their
  ignored action, whose result is dropped: what a ``NEXT_STEP`` vector env does inside.
* ``SAME_STEP``: refused. Such an env starts a copy's next episode in the step that ends the
  last one, so the next call steps that copy again, where the engine's ``FIRST`` step must
  leave it at its first observation.

Seeding: the vector env has one random generator for all copies, seeded with
``seed + first_env_id``; the same seed therefore starts other episodes than the per-copy
seeds of ``SyncVectorEnv`` (the tests hand both the same draws and compare them step by step).
"""

from __future__ import annotations

import inspect
import pickle
import sys
from typing import Any

import gymnasium
import numpy as np
from gymnasium.envs.registration import EnvSpec, load_env_creator
from gymnasium.vector import AutoresetMode, VectorEnv

from rlengine import ConfigError
from rlengine_gym.atari import is_ale_spec

__all__ = ["make_native", "native_obstacle", "native_state", "say_once", "step_then_reset"]

_said: set = set()


def say_once(line: str) -> None:
    """``line`` on stderr once per process, when a person watches it (a terminal); logs stay as they were."""
    if line not in _said and sys.stderr.isatty():
        _said.add(line)
        print(line, file=sys.stderr, flush=True)


def native_obstacle(spec: EnvSpec, make_kwargs: dict) -> str | None:
    """Why ``spec`` cannot run as a native vector env with ``make_kwargs``, or ``None`` when it can."""
    if spec.vector_entry_point is None:
        return "the id has no native vector env"
    if is_ale_spec(spec):
        return "Atari games keep this plugin's preprocessing (the ALE's vector env has its own)"
    if spec.additional_wrappers:
        return "its registration adds wrappers, which a vector env cannot take"
    try:
        creator = load_env_creator(spec.vector_entry_point)
    except ImportError as err:
        return f"its vector env needs the module {err.name or str(err)!r}, which is not installed"
    if _declared_mode(getattr(creator, "metadata", {})) == AutoresetMode.SAME_STEP:
        return _SAME_STEP
    kwargs = {**spec.kwargs, **make_kwargs}
    if spec.max_episode_steps is not None:
        kwargs.setdefault("max_episode_steps", spec.max_episode_steps)
    refused = _refused_keywords(creator, kwargs)
    if refused:
        return f"its vector env {_name(creator)} takes no {refused[0]!r} argument"
    render_mode = make_kwargs.get("render_mode")
    if render_mode is not None and render_mode not in getattr(creator, "metadata", {}).get("render_modes", ()):
        return f"its vector env {_name(creator)} cannot render {render_mode!r}"
    return None


_SAME_STEP = ("its vector env resets a copy in the step that ends its episode (same-step autoreset), "
              "where the engine's FIRST step needs the copy left at its first observation")


def make_native(spec: EnvSpec, num_envs: int, make_kwargs: dict) -> VectorEnv:
    """The native vector env of ``spec`` holding ``num_envs`` copies; ``ConfigError`` when it cannot be used."""
    obstacle = native_obstacle(spec, make_kwargs)
    if obstacle is not None:
        raise ConfigError(f'[gym] vectorization = "native" cannot step {spec.id!r}: {obstacle}; '
                          f'use "auto" or "sync"')
    venv = gymnasium.make_vec(spec, num_envs=num_envs, vectorization_mode="vector_entry_point", **make_kwargs)
    if autoreset_mode(venv) == AutoresetMode.SAME_STEP:
        venv.close()
        raise ConfigError(f'[gym] vectorization = "native" cannot step {spec.id!r}: {_SAME_STEP}; use "sync"')
    return venv


def autoreset_mode(venv: VectorEnv) -> AutoresetMode:
    """The autoreset mode ``venv`` declares (``NEXT_STEP`` when it declares none, Gymnasium's default)."""
    return _declared_mode(venv.metadata) or AutoresetMode.NEXT_STEP


def step_then_reset(venv: VectorEnv, action: Any, ended: np.ndarray) -> tuple:
    """One step of a ``DISABLED``-autoreset ``venv``, then the copies in ``ended`` reset (as ``NEXT_STEP`` would)."""
    obs, reward, terminated, truncated, info = venv.step(action)
    if np.count_nonzero(ended):
        obs, _ = venv.reset(options={"reset_mask": np.array(ended, dtype=bool)})
        terminated[ended] = False
        truncated[ended] = False
    return obs, reward, terminated, truncated, info


def native_state(venv: VectorEnv, env_id: str) -> bytes:
    """``venv`` pickled whole (its arrays and random generator); ``NotImplementedError`` when it does not pickle."""
    try:
        return pickle.dumps(venv)
    except Exception as err:
        say_once(f"rlengine: {env_id}: its native vector env cannot be saved ({type(err).__name__}: {err}); "
                 f"a resumed run starts new episodes")
        raise NotImplementedError(f"{env_id!r}: the native vector env does not pickle") from err


def _declared_mode(metadata: Any) -> AutoresetMode | None:
    mode = metadata.get("autoreset_mode") if isinstance(metadata, dict) else None
    try:
        return AutoresetMode(mode) if mode is not None else None
    except ValueError:
        return None


def _refused_keywords(creator: Any, kwargs: dict) -> list:
    """The keys of ``kwargs`` that ``creator``'s signature does not take (none when it takes ``**kwargs``)."""
    try:
        parameters = inspect.signature(creator).parameters.values()
    except (TypeError, ValueError):  # no signature to read: let the call tell
        return []
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return []
    names = {p.name for p in parameters if p.kind is not inspect.Parameter.POSITIONAL_ONLY}
    return sorted(set(kwargs) - names)


def _name(creator: Any) -> str:
    return getattr(creator, "__name__", type(creator).__name__)
