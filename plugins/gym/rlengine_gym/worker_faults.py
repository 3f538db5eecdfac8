"""Failures of worker processes and of making an env, as one line each.

A worker process of ``vectorization = "async"`` that dies (a segfault in
the env's native code, the kernel's OOM killer, ``os._exit``) shows up in
this process as a bare ``EOFError`` on its pipe. :func:`worker_faults`
turns that into :class:`EnvWorkerDied` naming the worker and its signal,
which rlengine's fault guard reports in one warning line and repairs by
recreating the environment. A Python exception in a worker comes back as
that exception; Gymnasium's own log of the worker's traceback around it is
held back (``RLENGINE_DEBUG=1`` keeps it), since the guard's warning says
what was raised.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from typing import Any, Iterator

import gymnasium
from gymnasium.vector import AsyncVectorEnv

from rlengine import ConfigError

#: How long to wait for a worker whose pipe broke to be reaped, so its exit status can be read.
_REAP_SECONDS = 2.0


class EnvWorkerDied(RuntimeError):
    """A worker process of an async Gymnasium vector env ended without answering."""


@contextlib.contextmanager
def worker_faults(venv: AsyncVectorEnv, env_id: str, first_env_id: int, on_broken: Any) -> Iterator[None]:
    """Run a call into the workers of ``venv``; a broken pipe becomes :class:`EnvWorkerDied`.

    ``on_broken()`` is called first, so the environment closes its workers by
    terminating them (a polite close would wait on the dead one's pipe).
    """
    saved_level = gymnasium.logger.min_level
    if not os.environ.get("RLENGINE_DEBUG"):
        gymnasium.logger.min_level = gymnasium.logger.ERROR + 1  # its log of a worker's traceback
    try:
        yield
    except (EOFError, ConnectionError) as error:  # ConnectionError: BrokenPipeError, ConnectionResetError
        on_broken()
        raise dead_worker_error(venv, env_id, first_env_id, error) from error
    finally:
        gymnasium.logger.min_level = saved_level


def dead_worker_error(venv: AsyncVectorEnv, env_id: str, first_env_id: int, error: BaseException) -> EnvWorkerDied:
    """``env worker 3 of 'CartPole-v1' (env_id 3) was killed by SIGSEGV``, or the broken pipe when no
    worker is seen to have ended."""
    deadline = time.perf_counter() + _REAP_SECONDS
    while True:
        ended = [(i, p.exitcode) for i, p in enumerate(venv.processes) if p.exitcode is not None]
        if ended or time.perf_counter() > deadline:
            break
        time.sleep(0.01)
    if not ended:
        return EnvWorkerDied(f"lost the connection to the worker processes of {env_id!r} "
                             f"({type(error).__name__}: {error})".replace(": )", ")"))
    index, code = ended[0]
    return EnvWorkerDied(f"env worker {index} of {env_id!r} (env_id {first_env_id + index}) {_how_it_ended(code)}")


def _how_it_ended(exitcode: int) -> str:
    if exitcode < 0:
        try:
            return f"was killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"was killed by signal {-exitcode}"
    return f"exited with status {exitcode}"


def terminate_workers(venv: AsyncVectorEnv) -> None:
    """Close ``venv`` by terminating its workers, without waiting for the call that broke."""
    from gymnasium.vector.async_vector_env import AsyncState

    venv._state = AsyncState.DEFAULT  # the pending call will never be answered: do not wait for it
    venv.close(terminate=True)


#: The extras of this package by the module (prefix) of the entry points they serve, matched by module
#: rather than by id so every id of those envs is covered: (what the envs need, the extra, its main module).
_EXTRAS = {
    "ale_py": ("ale-py (the Atari emulator and its games)", "atari", "ale_py"),
    "gymnasium.envs.box2d": ("Box2D", "box2d", "Box2D"),
    "gymnasium.envs.mujoco": ("MuJoCo", "mujoco", "mujoco"),
    "rlengine_gym.legacy": ("the old gym package and shimmy", "legacy", "gym"),
}


def install_command(extra: str) -> str:
    """What to run for an extra of this package: ``pip install "rlengine-gym[box2d]"``."""
    return f'pip install "rlengine-gym[{extra}]"'


def missing_dependency_error(env_id: str, error: ImportError | gymnasium.error.DependencyNotInstalled,
                             entry_module: str = "") -> ConfigError:
    """One line naming what to install: the extra of this package for envs of ``entry_module`` (the module
    of the id's entry point), else Gymnasium's own advice, else the missing module."""
    extra = next((found for prefix, found in _EXTRAS.items()
                  if entry_module == prefix or entry_module.startswith(prefix + ".")), None)
    if extra is not None:
        return _missing_extra_error(env_id, error, *extra)
    if isinstance(error, gymnasium.error.DependencyNotInstalled):
        advice = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        pip = re.findall(r"pip install [^`'\n]+", advice)
        fix = f"; install it with: {' && '.join(p.strip() for p in pip)}" if pip else ""
        return ConfigError(f"environment {env_id!r} cannot be made: {advice}{fix}")
    module = getattr(error, "name", None) or str(error)
    return ConfigError(f"environment {env_id!r} needs the Python module {module!r}, which is not installed "
                       f"({type(error).__name__}: {error}); pip install the package that provides it")


def _missing_extra_error(env_id: str, error: BaseException, needs: str, extra: str, main_module: str) -> ConfigError:
    # Gymnasium raises DependencyNotInstalled from the ImportError, which names the module.
    cause = error.__cause__ if isinstance(error, gymnasium.error.DependencyNotInstalled) else error
    fix = install_command(extra)
    if isinstance(cause, ImportError) and not isinstance(cause, ModuleNotFoundError):  # there, but broken
        detail = " ".join(str(cause).split())
        return ConfigError(f"environment {env_id!r} needs {needs}, which cannot be imported "
                           f"({type(cause).__name__}: {detail}); reinstall it with: {fix}")
    missing = (getattr(cause, "name", None) or main_module).split(".")[0]
    what = needs if missing == main_module else f"the module {missing!r} (part of the {extra} extra)"
    return ConfigError(f"environment {env_id!r} needs {what}, which is not installed; install it with: {fix}")
