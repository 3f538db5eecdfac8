"""``GymConfig``: the ``[gym]`` section, and how its Atari keys resolve for one env id."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import gymnasium
import numpy as np

from rlengine import ConfigError
from rlengine_gym.atari import AtariSettings, is_ale_id, is_ale_spec, missing_atari_module
from rlengine_gym.worker_faults import install_command

__all__ = ["GymConfig", "atari_settings"]


VECTORIZATIONS = ("auto", "sync", "async", "native")


def _check_vectorization(_inst: Any, _attr: Any, value: Any) -> None:
    if value not in VECTORIZATIONS:
        raise ConfigError(f'[gym] vectorization must be "auto", "sync", "async" or "native", got {value!r}')


def _check_max_episode_steps(_inst: Any, _attr: Any, value: Any) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ConfigError(f"[gym] max_episode_steps must be a positive integer or unset, got {value!r}")


def _check_render_mode(_inst: Any, _attr: Any, value: Any) -> None:
    if value is not None and (not isinstance(value, str) or not value):
        raise ConfigError(f'[gym] render_mode must be a mode name such as "rgb_array" or unset, got {value!r}')


def _check_make_kwargs(_inst: Any, _attr: Any, value: Any) -> None:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise ConfigError(f"[gym] make_kwargs must be a table of keyword arguments, got {value!r}")
    reserved = {"max_episode_steps", "render_mode"} & set(value)
    if reserved:
        raise ConfigError(f"[gym] make_kwargs must not set {sorted(reserved)[0]!r}; use the [gym] key of that name")


def _check_optional_bool(_inst: Any, attr: Any, value: Any) -> None:
    if value is not None and not isinstance(value, bool):
        raise ConfigError(f"[gym] {attr.name} must be true, false or unset, got {value!r}")


def _count(minimum: int) -> Any:
    """An integer key's validator (bools refused: ``true`` is not a count)."""
    return [attrs.validators.instance_of(int), attrs.validators.not_(attrs.validators.instance_of(bool)),
            attrs.validators.ge(minimum)]


_BOOL = attrs.validators.instance_of(bool)


@attrs.frozen
class GymConfig:
    """The ``[gym]`` section of a run's config."""

    #: "auto": "native" where the id has a vector env that can honour the other keys, else "sync";
    #: "sync": every copy steps in this process; "async": one worker process per copy;
    #: "native": the id's own vector env (Gymnasium's vector entry point), all copies in one numpy step.
    vectorization: str = attrs.field(default="auto", validator=_check_vectorization)
    #: Make the id with the old ``gym`` package (0.21 or 0.26 API) through shimmy; needs the legacy extra.
    legacy: bool = attrs.field(default=False, validator=_BOOL)
    #: Overrides the episode step limit of the registered id (``None``: keep it).
    max_episode_steps: int | None = attrs.field(default=None, validator=_check_max_episode_steps)
    #: Passed to ``gymnasium.make``; "rgb_array" enables ``render()``.
    render_mode: str | None = attrs.field(default=None, validator=_check_render_mode)
    #: Extra keyword arguments for ``gymnasium.make`` (e.g. ``{continuous = true}``).
    make_kwargs: dict = attrs.field(factory=dict, validator=_check_make_kwargs)
    #: Atari preprocessing (the atari_* keys); unset: on for ALE/ ids, off otherwise; false: the raw game frames.
    atari: bool | None = attrs.field(default=None, validator=_check_optional_bool)
    #: Atari: at most this many no-op steps (random count) start each game; 0: none.
    atari_noop_max: int = attrs.field(default=30, validator=_count(0))
    #: Atari: emulator frames per agent step, the action repeated; the observation is the max of the last two.
    atari_frame_skip: int = attrs.field(default=4, validator=_count(1))
    #: Atari: frames are resized to screen_size x screen_size pixels.
    atari_screen_size: int = attrs.field(default=84, validator=_count(1))
    #: Atari: grayscale frames (false: RGB, 3 channels per frame).
    atari_grayscale: bool = attrs.field(default=True, validator=_BOOL)
    #: Atari, training only: a lost life ends the episode; the next one continues the same game.
    atari_terminal_on_life_loss: bool = attrs.field(default=True, validator=_BOOL)
    #: Atari: press FIRE after each reset in games that have it (Breakout waits for it).
    atari_fire_on_reset: bool = attrs.field(default=True, validator=_BOOL)
    #: Atari, training only: rewards become their sign (-1, 0, 1).
    atari_clip_rewards: bool = attrs.field(default=True, validator=_BOOL)
    #: Atari: the observation holds the last this-many frames along its last axis, uint8 [84, 84, 4].
    atari_frame_stack: int = attrs.field(default=4, validator=_count(1))
    #: Set by the engine for evaluation copies: Atari then reports the raw game score over whole games.
    evaluation: bool = attrs.field(default=False, validator=_BOOL)


def atari_settings(config: GymConfig, env_id: str, spec: gymnasium.envs.registration.EnvSpec) -> AtariSettings | None:
    """The Atari preprocessing of ``env_id`` under ``config``, or ``None`` for the env as registered."""
    enabled = is_ale_id(env_id) if config.atari is None else config.atari
    if not enabled:
        return None
    if not is_ale_spec(spec):
        raise ConfigError(f"[gym] atari = true needs an Atari game such as 'ALE/Breakout-v5', got {env_id!r}; "
                          f"leave atari unset for other environments")
    missing = missing_atari_module(with_preprocessing=True)
    if missing is not None:
        raise ConfigError(f"the Atari preprocessing of {env_id!r} needs {missing[1]} (module {missing[0]!r}), "
                          f"which is not installed; install it with: {install_command('atari')} "
                          f"(or set atari = false in [gym])")
    if "frameskip" in config.make_kwargs:
        raise ConfigError("[gym] make_kwargs must not set 'frameskip' with the Atari preprocessing; use "
                          "atari_frame_skip (or atari = false for the env's own frame skipping)")
    training = not config.evaluation
    return AtariSettings(
        noop_max=config.atari_noop_max,
        frame_skip=config.atari_frame_skip,
        screen_size=config.atari_screen_size,
        grayscale=config.atari_grayscale,
        terminal_on_life_loss=config.atari_terminal_on_life_loss and training,
        fire_on_reset=config.atari_fire_on_reset,
        clip_rewards=config.atari_clip_rewards and training,
        frame_stack=config.atari_frame_stack,
    )
