"""Atari games (``ALE/<Game>-v5``) with the standard DQN-style preprocessing.

The ids come from ``ale-py`` (the ``atari`` extra of this package), which is
imported only when an ``ALE/`` id is asked for, so ``rlengine plugins`` and
non-Atari runs never load the emulator.

One copy is built as (innermost first): the ALE env with ``frameskip=1``;
Gymnasium's ``AtariPreprocessing`` (random no-op starts, frame skip with a
max over the last two frames, resize, grayscale); an optional step limit in
agent steps; for training, a lost life ends the episode
(:class:`LifeLossEpisodes`); FIRE after each reset (and, in whole games,
after each lost life) where the game has it; for training, the reward's
sign; and a channels-last frame stack. Evaluation copies keep the raw score
and play whole games.

Free of TensorFlow and rlengine imports: worker processes import it.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any, NamedTuple

import gymnasium
from gymnasium.wrappers import AtariPreprocessing, TimeLimit

from rlengine_gym.atari_wrappers import (
    FireOnReset,
    LifeLossEpisodes,
    PicklableGame,
    SignRewards,
    StackFrames,
    fire_action,
)
from rlengine_gym.worker import entry_point_module, make_env, split_env_id

__all__ = ["AtariSettings", "is_ale_id", "make_atari_env", "missing_atari_module", "register_ale"]

#: Python modules the Atari envs and their preprocessing import, with the package that provides each.
_MODULES = {"ale_py": "ale-py", "cv2": "opencv-python-headless"}


class AtariSettings(NamedTuple):
    """The preprocessing of one run's Atari copies (resolved from ``[gym]``; pickled to workers)."""

    noop_max: int
    frame_skip: int
    screen_size: int
    grayscale: bool
    terminal_on_life_loss: bool
    fire_on_reset: bool
    clip_rewards: bool
    frame_stack: int


def is_ale_id(env_id: str) -> bool:
    """Whether ``env_id`` (optionally ``module:``-prefixed) names an ``ALE/`` game."""
    return split_env_id(env_id)[1].startswith("ALE/")


def is_ale_spec(spec: gymnasium.envs.registration.EnvSpec) -> bool:
    """Whether a registered spec builds an ale-py env (``ALE/`` and the legacy v0/v4 ids alike)."""
    return entry_point_module(spec).split(".")[0] == "ale_py"


def missing_atari_module(with_preprocessing: bool) -> tuple[str, str] | None:
    """``(module, package)`` of the first Atari module that is not installed, or ``None``."""
    modules = _MODULES if with_preprocessing else {"ale_py": _MODULES["ale_py"]}
    for module, package in modules.items():
        if importlib.util.find_spec(module) is None:
            return module, package
    return None


def register_ale() -> None:
    """Register the ``ALE/`` ids with Gymnasium (``ImportError`` when ale-py is missing)."""
    ale_py = importlib.import_module("ale_py")
    gymnasium.register_envs(ale_py)
    # Its banner ("A.L.E: Arcade Learning Environment ...") would otherwise print once per process.
    ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)


def make_atari_env(env_id: str, spec: Any, make_kwargs: dict, settings: AtariSettings) -> gymnasium.Env:
    """Build one preprocessed copy. Top-level so worker processes can unpickle it.

    ``make_kwargs`` go to ``gymnasium.make`` (e.g. ``repeat_action_probability``,
    ``render_mode``); a ``max_episode_steps`` there counts agent steps of a
    whole game, not emulator frames.
    """
    register_ale()  # a worker handed no spec finds the ids by name
    kwargs = dict(make_kwargs)
    max_steps = kwargs.pop("max_episode_steps", None)
    kwargs["frameskip"] = 1  # AtariPreprocessing skips the frames
    if settings.grayscale:
        # AtariPreprocessing reads the screen itself; a gray frame per emulator step is cheaper than RGB.
        kwargs.setdefault("obs_type", "grayscale")
    env = PicklableGame(make_env(env_id, spec, kwargs))
    env = AtariPreprocessing(env, noop_max=settings.noop_max, frame_skip=settings.frame_skip,
                             screen_size=settings.screen_size, grayscale_obs=settings.grayscale)
    if max_steps is not None:
        env = TimeLimit(env, max_episode_steps=max_steps)
    if settings.terminal_on_life_loss:
        env = LifeLossEpisodes(env)
    fire = fire_action(env) if settings.fire_on_reset else None
    if fire is not None:
        env = FireOnReset(env, fire, after_life_loss=not settings.terminal_on_life_loss)
    if settings.clip_rewards:
        env = SignRewards(env)
    return StackFrames(env, settings.frame_stack)
