"""Opening a finished (or running) run directory for ``eval``, ``play`` and ``export``.

A run directory is what ``rlengine train`` writes: ``config.toml`` (the
effective config), ``checkpoints/``, ``metrics.jsonl`` and ``tensorboard/``.
Its config is rebuilt with ``train.root_dir`` pointing at the directory,
so the newest checkpoint there is the one restored.
"""

from __future__ import annotations

import json
import os
from typing import Any, Iterable

import attrs

from rlengine import ConfigError, RLEngineError

CONFIG_FILE = "config.toml"


class RunDirError(RLEngineError):
    """A path given as a run directory is missing or is not one."""


def check_run_dir(root_dir: str, command: str = "eval") -> str:
    """``root_dir`` with its ``config.toml`` path checked; one-line errors otherwise."""
    if not os.path.exists(root_dir):
        raise RunDirError(f"run directory {root_dir!r} does not exist: pass the --root-dir of a "
                          f"'rlengine train' run, e.g. rlengine {command} runs/<run-name>")
    if not os.path.isdir(root_dir):
        raise RunDirError(f"{root_dir!r} is a file, not a run directory: pass the directory that "
                          f"'rlengine train' wrote (it holds {CONFIG_FILE} and checkpoints/)")
    config_path = os.path.join(root_dir, CONFIG_FILE)
    if not os.path.isfile(config_path):
        raise RunDirError(f"{root_dir!r} is not an rlengine run directory (no {CONFIG_FILE}): pass the "
                          f"directory that 'rlengine train' wrote, e.g. runs/<run-name>")
    return config_path


def open_run(root_dir: str, overrides: Iterable[str] = (), command: str = "eval", **engine_kwargs: Any):
    """An :class:`rlengine.Engine` configured from ``root_dir/config.toml``.

    ``overrides`` are ``section.key=value`` strings applied on top (e.g. a
    different seed); ``engine_kwargs`` go to the engine (plugins).
    """
    from rlengine import Engine  # imports TensorFlow: only when a command runs

    config_path = check_run_dir(root_dir, command)
    root_override = f"train.root_dir={json.dumps(os.path.abspath(root_dir))}"
    try:
        return Engine(config_path, [*overrides, root_override], **engine_kwargs)
    except ConfigError as err:
        # e.g. a config.toml of another program, or of a run that needs a plugin not installed here
        raise ConfigError(f"{config_path}: {err}") from None


def single_copy_overrides() -> list:
    """Overrides that make the rebuilt run as small as possible: one env copy, one eval copy.

    Play and export only need the policy and one environment to step; the
    restored weights do not depend on the number of copies.
    """
    return ["train.num_envs=1", "train.num_eval_episodes=1"]


def enable_rendering(engine: Any) -> None:
    """Ask the run's environment for RGB frames, if its config has a ``render_mode`` key.

    Environments that must be told at construction that they will render
    (Gymnasium's ``render_mode``) declare that key in their config class;
    others either render anyway or raise from ``render()``, which
    :func:`rlengine_tools.play.render_frame` turns into a one-line error.
    """
    name, env_cls = engine.environment_section()
    config_class = getattr(env_cls, "config_class", None)
    if config_class is None or not attrs.has(config_class):
        return
    if "render_mode" not in attrs.fields_dict(config_class):
        return
    section = engine.config.section(name, config_class)
    engine.config.sections[name] = attrs.evolve(section, render_mode="rgb_array")
