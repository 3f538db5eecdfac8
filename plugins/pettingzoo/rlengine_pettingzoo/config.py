"""``PettingZooConfig``: the ``[pettingzoo]`` (or ``[mpe2]``) section of a run's config."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from rlengine import ConfigError

__all__ = ["APIS", "OPPONENTS", "POOL_MOVES", "POOL_SAMPLING", "PettingZooConfig", "section_of"]

#: "auto": the module's Parallel API where it has one, else its AEC game turn by turn;
#: "parallel": the Parallel API (an AEC-only game through PettingZoo's aec_to_parallel, where it allows it);
#: "turns": the AEC game, the learner in one seat and the other seats played by the opponent.
APIS = ("auto", "parallel", "turns")
#: The players of a turn-based game's other seats: the built-in ones (:mod:`rlengine_pettingzoo.opponents`) and
#: the pool of the run's own checkpoints (:mod:`rlengine_pettingzoo.pool`).
OPPONENTS = ("random", "lookahead", "pool")
#: How a pool opponent picks its member for each game: any member alike, or the newest.
POOL_SAMPLING = ("uniform", "latest")
#: How a pool member picks its moves: from its exploration policy, or its greedy action.
POOL_MOVES = ("sampled", "greedy")


def _check_make_kwargs(_inst: Any, _attr: Any, value: Any) -> None:
    # render_mode has a key of its own: the engine sets it for rlengine play --record
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value) or "render_mode" in value:
        raise ConfigError(f"[pettingzoo] make_kwargs must be a table of keyword arguments other than render_mode "
                          f"(a [pettingzoo] key of its own), got {value!r}")


def _one_of(choices: tuple) -> Any:
    def check(_inst: Any, attr: Any, value: Any) -> None:
        if value not in choices:
            raise ConfigError(f"[pettingzoo] {attr.name} must be one of {', '.join(map(repr, choices))}, "
                              f"got {value!r}")
    return check


def _check_eval_opponents(_inst: Any, _attr: Any, value: Any) -> None:
    if not isinstance(value, (list, tuple)) or any(name not in OPPONENTS for name in value) or \
            len(set(value)) != len(value):
        raise ConfigError(f"[pettingzoo] eval_opponents must be a list of distinct opponents among "
                          f"{', '.join(map(repr, OPPONENTS))}, got {value!r}")


def _positive_int(_inst: Any, attr: Any, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"[pettingzoo] {attr.name} must be a positive integer, got {value!r}")


_BOOL = attrs.validators.instance_of(bool)


@attrs.frozen
class PettingZooConfig:
    """The ``[pettingzoo]`` section (``[mpe2]`` for ``mpe2/`` ids) of a run's config."""

    #: Keyword arguments for the module's ``parallel_env`` / ``env`` (e.g. ``{N = 3, max_cycles = 25}``).
    make_kwargs: dict = attrs.field(factory=dict, validator=_check_make_kwargs)
    #: Which PettingZoo API steps the game (see ``APIS``).
    api: str = attrs.field(default="auto", validator=_one_of(APIS))
    #: Append a one-hot of the agent's index to its observation (parameter sharing tells the agents apart).
    agent_id: bool = attrs.field(default=True, validator=_BOOL)
    #: Add the leaf ``global_state`` to every row: the game's ``state()``, else every agent's observation joined
    #: (for PPO's ``central_critic``, MAPPO).
    global_state: bool = attrs.field(default=False, validator=_BOOL)
    #: Who plays the other seats of a turn-based game in training: "random" (a uniformly random legal move),
    #: "lookahead" (wins at once where it can, else blocks the next player's win, else random) or "pool" (self-play:
    #: the greedy policy of one of the run's past checkpoints, per game; random moves before the first).
    opponent: str = attrs.field(default="random", validator=_one_of(OPPONENTS))
    #: How many checkpoints the pool holds: the newest of those it takes.
    pool_size: int = attrs.field(default=5, validator=_positive_int)
    #: The pool takes the checkpoints whose iteration is a multiple of this (1: every checkpoint); with
    #: train.checkpoint_interval a multiple of it, a member joins every pool_every iterations.
    pool_every: int = attrs.field(default=1, validator=_positive_int)
    #: Which member a pool opponent plays each game with: "uniform" (any, drawn from the game copy's seeded
    #: stream) or "latest" (the newest).
    pool_sampling: str = attrs.field(default="uniform", validator=_one_of(POOL_SAMPLING))
    #: How a pool member moves: "greedy" (the snapshot's greedy action) or "sampled" (drawn from its exploration
    #: policy, as it played in training).
    pool_moves: str = attrs.field(default="greedy", validator=_one_of(POOL_MOVES))
    #: The opponents a turn-based game's evaluation plays, each in turn, reported as ``eval/vs_<opponent>/win_rate``
    #: (and per seat); [] (the default): the training opponent alone.
    eval_opponents: list = attrs.field(factory=list, validator=_check_eval_opponents)
    #: Passed to the environment; "rgb_array" enables ``render()``.
    render_mode: str | None = attrs.field(default=None)
    #: Set by the engine for evaluation copies (their row count may be rounded up to whole games).
    evaluation: bool = attrs.field(default=False, validator=_BOOL)
    #: Set by the engine: the run's directory, whose checkpoints the pool opponent plays.
    run_dir: str = attrs.field(default="", validator=attrs.validators.instance_of(str))

    def opponents(self) -> tuple:
        """The opponents of this run's copies: the evaluation's (``eval_opponents`` or else ``opponent``) or
        training's."""
        return tuple(self.eval_opponents or [self.opponent]) if self.evaluation else (self.opponent,)


def section_of(config: Any) -> PettingZooConfig:
    """``config`` as a :class:`PettingZooConfig` (``None``: the defaults; a mapping: its keys)."""
    if config is None:
        return PettingZooConfig()
    if isinstance(config, Mapping):
        try:
            return PettingZooConfig(**config)
        except (TypeError, ValueError) as err:
            raise ConfigError(f"[pettingzoo] {err}") from None
    return config
