"""Starting the worker processes of ``vectorization = "async"``, one per copy of the env.

Each worker builds its copy from a thunk this process pickles to it. These helpers decide
how the workers start (:data:`START_METHOD`), what the thunk may carry (:func:`picklable`),
whether they may skip this process's main module (:func:`workers_need_main`,
:func:`main_module_hidden`), and when the copies must run in workers even if the config asks
for ``"sync"`` (:func:`draws_in_workers`).
"""

from __future__ import annotations

import contextlib
import functools
import multiprocessing
import pickle
import sys
from typing import Any

import gymnasium

from rlengine_gym.config import GymConfig
from rlengine_gym.worker import entry_point_module

__all__ = ["START_METHOD", "draws_in_workers", "main_module_hidden", "picklable", "workers_need_main"]

# TensorFlow is loaded in this process, so worker processes must not be forked
# from it: forkserver forks them from a clean server process instead.
START_METHOD = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


def workers_need_main(thunk: functools.partial) -> bool:
    """Whether a worker process may need this process's ``__main__`` to build its env."""
    if thunk.args[1] is None:  # made by id: anything may be involved
        return True
    try:
        data = pickle.dumps(thunk)
    except Exception:
        return True
    return b"__main__" in data


@contextlib.contextmanager
def main_module_hidden(hide: bool):
    """Keep worker processes from re-running this process's main module while they start.

    Spawned and forkserver children re-import the parent's main module (as
    ``__mp_main__``) so that objects defined there unpickle. Here that module
    is typically a script or the ``rlengine`` command, which imports
    TensorFlow: its whole import, time and memory, per worker for nothing
    (docs/performance.md), since the env thunk only needs Gymnasium and the
    env's own module. When the thunk does not refer to ``__main__``, the main
    module's location is hidden from ``multiprocessing`` for the moment the
    workers start.
    """
    main = sys.modules.get("__main__")
    if not hide or main is None:
        yield
        return
    missing = object()
    saved_file = getattr(main, "__file__", missing)
    saved_spec = getattr(main, "__spec__", None)
    try:
        if saved_file is not missing:
            del main.__file__
        main.__spec__ = None
        yield
    finally:
        if saved_file is not missing:
            main.__file__ = saved_file
        main.__spec__ = saved_spec


def draws_in_workers(spec: gymnasium.envs.registration.EnvSpec, config: GymConfig) -> bool:
    """Whether the copies must run in worker processes to render: MuJoCo frames (``rgb_array``).

    MuJoCo draws with OpenGL, which without a GPU is Mesa's llvmpipe; its LLVM clashes with
    the one TensorFlow loads into this process (with ``RTLD_GLOBAL``) and the process crashes
    at the first frame. Worker processes have no TensorFlow.
    """
    return config.render_mode == "rgb_array" and entry_point_module(spec).startswith("gymnasium.envs.mujoco.")


def picklable(obj: Any) -> bool:
    """Whether ``obj`` pickles, hence can travel to a worker process inside the env thunk."""
    try:
        pickle.dumps(obj)
    except Exception:
        return False
    return True
