"""Opening a finished (or running) run directory for ``eval``, ``play`` and ``export``.

A run directory is what ``rlengine train`` writes: ``config.toml`` (the
effective config), ``checkpoints/``, ``metrics.jsonl`` and ``tensorboard/``.
Its config is rebuilt with ``train.root_dir`` pointing at the directory,
so its checkpoints are the ones restored: the newest by default, or the one
``--checkpoint`` chooses (``best``, of the best evaluation return, kept in
``checkpoints/best/``; or an iteration number).
"""

from __future__ import annotations

import json
import os
from typing import Any, Iterable

import attrs

from rlengine import ConfigError, RLEngineError

CONFIG_FILE = "config.toml"
CHECKPOINT_HELP = ("which checkpoint: latest (the newest, default), best (of the best evaluation return) or "
                   "an iteration number")


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


def checked_checkpoint(text: str) -> str:
    """``--checkpoint``'s text, checked before TensorFlow is imported (the engine checks it again)."""
    word = str(text).strip().lower()
    if word in ("latest", "best") or word.isdigit():
        return word
    raise RLEngineError(f"--checkpoint {text!r} is not a choice: use latest, best or an iteration number "
                        "(e.g. --checkpoint best)")


def checkpoint_summary(prefix: str) -> dict:
    """Which checkpoint was restored, for a command's output: ``checkpoint``, ``iteration``, ``eval_return``.

    ``checkpoint`` is the prefix relative to the run's ``checkpoints/``
    (``ckpt-12``, or ``best/ckpt-12`` for the best one); ``iteration`` and,
    for the best one, ``eval_return`` (the evaluation return that made it
    best; else None) come from its marker ``<prefix>.complete``.
    """
    directory, name = os.path.split(prefix)
    best = os.path.basename(directory) == "best"
    try:
        with open(prefix + ".complete", encoding="utf-8") as f:
            marker = json.load(f)
    except (OSError, ValueError):  # replaced since it was restored (a training run wrote a new best)
        marker = {}
    marker = marker if isinstance(marker, dict) else {}
    iteration = marker.get("iteration")
    if not isinstance(iteration, int):
        tail = name.rsplit("-", 1)[-1]
        iteration = int(tail) if tail.isdigit() else None
    eval_return = marker.get("eval_return") if best else None
    return {"checkpoint": f"best/{name}" if best else name, "iteration": iteration,
            "eval_return": float(eval_return) if isinstance(eval_return, (int, float)) else None}


def describe_checkpoint(summary: dict) -> str:
    """``best checkpoint of iteration 12, which scored 7.50 in training``, or ``checkpoint of iteration 12``."""
    if not summary["checkpoint"].startswith("best/"):
        return f"checkpoint of iteration {summary['iteration']}"
    scored = "" if summary["eval_return"] is None else f", which scored {summary['eval_return']:.2f} in training"
    return f"best checkpoint of iteration {summary['iteration']}{scored}"


def evaluate_checkpoint(engine: Any, choice: str = "latest") -> tuple[dict, dict]:
    """The evaluator's metrics of the checkpoint ``choice`` names, and :func:`checkpoint_summary` of it."""
    with engine.restored(choice) as components:
        summary = checkpoint_summary(engine.newest_checkpoint())  # inside the block: the one restored
        return components.evaluate(), summary


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
