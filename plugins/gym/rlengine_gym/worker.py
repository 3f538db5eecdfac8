"""Making one Gymnasium env, in this process or in a worker process.

Kept free of TensorFlow and rlengine imports: ``AsyncVectorEnv`` workers
unpickle :func:`make_env` by reference, which imports this module (and the
package's light ``__init__``) only. Importing it registers the ``rlengine/*``
Gymnasium ids (:mod:`rlengine_gym.test_envs`), so a worker can make them
whether or not it was handed the resolved spec.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import signal
from typing import Any

import gymnasium
from gymnasium.vector.async_vector_env import _async_worker

from rlengine_gym import test_envs  # noqa: F401  (registers the rlengine/* ids in this process)

__all__ = ["entry_point_module", "import_plugin_modules", "make_env", "quiet_worker", "render_off_screen",
           "split_env_id"]

_plugin_modules_imported = False


def import_plugin_modules() -> None:
    """Import every module of the ``rlengine`` entry-point group, ignoring failures.

    Plugins may register Gymnasium ids when imported; a fresh worker process
    needs them before ``gymnasium.make``.
    """
    global _plugin_modules_imported
    if _plugin_modules_imported:
        return
    _plugin_modules_imported = True
    for entry_point in importlib.metadata.entry_points(group="rlengine"):
        try:
            entry_point.load()
        except Exception:  # a broken plugin is reported by the main process, not here
            pass


def make_env(env_id: str, spec: gymnasium.envs.registration.EnvSpec | None, make_kwargs: dict) -> gymnasium.Env:
    """Build one copy. Top-level so worker processes can unpickle it.

    With ``spec`` (the id resolved by the main process) the registry is not
    needed: ``gymnasium.make`` imports the module of the spec's entry point.
    Without it (a spec that does not pickle), the modules of the ``rlengine``
    entry-point group and the ``module:`` part of the id are imported first,
    so that plugins register the id in this process too.
    """
    if make_kwargs.get("render_mode") == "rgb_array":
        render_off_screen()
    if spec is not None:
        return gymnasium.make(spec, **make_kwargs)
    import_plugin_modules()
    module, name = split_env_id(env_id)
    if module:
        importlib.import_module(module)
    return gymnasium.make(name, **make_kwargs)


def render_off_screen() -> None:
    """Point Gymnasium's renderers at off-screen drawing where there is no display (a user's setting stays).

    Called in each process that makes a copy (worker processes too), before its first frame.
    """
    # pygame (classic control, Box2D) otherwise looks for a display and prints an error where there is none.
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        # MuJoCo's renderer tries GLFW first, which without a display gives a broken context rather
        # than an error, so it never falls back; EGL draws without one.
        os.environ.setdefault("MUJOCO_GL", "egl")


def entry_point_module(spec: gymnasium.envs.registration.EnvSpec) -> str:
    """The module of a registered spec's entry point (``gymnasium.envs.box2d.lunar_lander``), "" if unknown."""
    entry_point = spec.entry_point
    if isinstance(entry_point, str):
        return entry_point.partition(":")[0]
    return getattr(entry_point, "__module__", None) or ""


def split_env_id(env_id: str) -> tuple[str, str]:
    """``"module:Name-v0"`` -> ``("module", "Name-v0")``; ``"Name-v0"`` -> ``("", "Name-v0")``."""
    module, sep, name = env_id.partition(":")
    return (module, name) if sep else ("", env_id)


def quiet_worker(index: int, env_fn: Any, pipe: Any, parent_pipe: Any, *rest: Any) -> None:
    """Gymnasium's worker loop (same 8 arguments), minus the tracebacks of a worker left behind.

    Ctrl-C reaches every process of the terminal's group: the workers ignore
    it, since the main process stops the run (checkpoint first) and closes
    them; a worker interrupted here would instead send ``KeyboardInterrupt``
    back into the main process's step. A worker whose pipe is gone (the main
    process replaced it after a sibling crashed, or died itself) has nobody
    to report to and ends silently instead of printing a traceback. An env
    that cannot be made here is reported like an error of a call, so the main
    process raises it, rather than a bare ``EOFError`` after a traceback.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        try:
            env = env_fn()
        except Exception as exc:
            _report_failed_make(index, exc, pipe, parent_pipe, error_queue=rest[1])
            return
        _async_worker(index, lambda: env, pipe, parent_pipe, *rest)
    except (EOFError, BrokenPipeError, ConnectionResetError):
        pass


def _report_failed_make(index: int, error: Exception, pipe: Any, parent_pipe: Any, error_queue: Any) -> None:
    """Answer the main process's first command with ``error``, as Gymnasium's worker reports errors."""
    import traceback

    parent_pipe.close()
    error_queue.put((index, type(error), error, traceback.format_exc()))
    pipe.recv()
    pipe.send((None, False))
