"""The built-in players of a turn-based game's other seats: ``random`` and ``lookahead``.

An opponent answers ``move(game, obs, rng)``: the move of the seat to play (``game.agent_selection``)
in the AEC game ``game``, which observes ``obs``, drawing any chance from ``rng`` (the game copy's
own stream, so a seeded run replays its opponents' moves).

- ``random``: a uniformly random legal move (from the ``action_mask`` where the game has one, else
  a sample of the seat's action space).
- ``lookahead``: one move ahead. It plays a move that wins at once where there is one (the game ends
  and the mover's reward is positive); else it **blocks**: it plays a move the next player would win
  with, a move ``n`` that wins for that player when it plays ``n`` right after some other move of
  this seat's; else a random legal move. The moves are tried on copies of the raw game (under
  PettingZoo's wrappers), through the game's own ``step``, ``observe``, ``rewards`` and
  ``terminations``. Where every seat plays the same moves on one board (connect four, tic-tac-toe)
  playing ``n`` first is the block of the threat; ``n`` is a square the next player can take on its
  turn, so a connect-four threat one row above a column's top is left alone (playing under it would
  hand it over). Where a seat cannot play the other's moves (chess: each moves its own pieces) the
  next player's winning action is not this seat's move to take: it is played only where it is legal
  for this seat too, and means nothing there, so in such games the player is a winning-move finder
  and otherwise random. Several winning moves: the first in action order; several threats: a random
  one.
"""

from __future__ import annotations

import copy
import pickle
from typing import Any

import numpy as np
from gymnasium import spaces

from rlengine import ConfigError
from rlengine_pettingzoo.spaces import ACTION_MASK_KEY

__all__ = ["OPPONENTS", "Lookahead", "RandomMoves", "make_opponent"]


def _mask(obs: Any) -> Any:
    return obs.get(ACTION_MASK_KEY) if isinstance(obs, dict) else None


class RandomMoves:
    """A uniformly random legal move."""

    name = "random"

    def move(self, game: Any, obs: Any, rng: np.random.Generator) -> Any:
        mask = _mask(obs)
        if mask is not None:
            return int(rng.choice(np.flatnonzero(mask)))
        space = game.action_space(game.agent_selection)
        space.seed(int(rng.integers(2**31)))
        return space.sample()


class Lookahead:
    """Wins when it can, blocks the next player's win when it must, else plays a random legal move."""

    name = "lookahead"

    def move(self, game: Any, obs: Any, rng: np.random.Generator) -> Any:
        raw, me = game.unwrapped, game.agent_selection
        legal = _legal_moves(game.action_space(me), _mask(obs))
        threats: set = set()
        after = [(move, _played(raw, move)) for move in legal]
        for move, trial in after:
            if _won(trial, me):
                return move
        for move, trial in after:  # the next player's winning replies to each other move of this seat's
            threats.update(_winning_replies(trial, me, [n for n in legal if n != move and n not in threats]))
        return int(rng.choice(sorted(threats) or legal))


def _legal_moves(space: Any, mask: Any) -> list:
    return [int(m) for m in np.flatnonzero(mask)] if mask is not None else list(range(int(space.n)))


def _winning_replies(trial: Any, me: str, candidates: list) -> list:
    """The ``candidates`` with which the next player of ``trial`` (a game after this seat's move) wins at once."""
    if trial is None or not trial.agents or trial.agent_selection == me:
        return []
    player = trial.agent_selection
    if trial.terminations.get(player) or trial.truncations.get(player):
        return []
    mask = _mask(trial.observe(player))
    return [n for n in candidates if (mask is None or mask[n]) and _won(_played(trial, n), player)]


def _played(raw: Any, move: int) -> Any:
    """A copy of the raw game after its player to move plays ``move``; None if the game refuses it."""
    trial = _copied(raw)
    try:
        trial.step(move)
    except Exception:  # a game that refuses a move raises its own error: not a move to consider
        return None
    return trial


def _won(trial: Any, player: str) -> bool:
    """Whether the game ``trial`` (None: a move not played) ended with ``player`` paid."""
    return trial is not None and bool(trial.terminations.get(player)) and trial.rewards.get(player, 0) > 0


def _copied(raw: Any) -> Any:
    """A copy of the raw game's state. ``copy.deepcopy(raw)`` will not do: PettingZoo's games pickle as their
    constructor's arguments (gymnasium's EzPickle), so a deep copy is a fresh game, not this position.
    The spaces are shared, not copied (they are fixed, and copying them is most of the cost)."""
    own = {key: value for key, value in vars(raw).items() if not _is_spaces(value)}
    try:  # a round trip through pickle copies a game's lists and dicts for less than deepcopy
        state = pickle.loads(pickle.dumps(own, pickle.HIGHEST_PROTOCOL))
    except Exception:  # e.g. a drawing surface that does not pickle
        state = copy.deepcopy(own)
    trial = object.__new__(type(raw))
    trial.__dict__.update(vars(raw))
    trial.__dict__.update(state)
    return trial


def _is_spaces(value: Any) -> bool:
    return isinstance(value, spaces.Space) or (
        isinstance(value, dict) and bool(value) and all(isinstance(v, spaces.Space) for v in value.values()))


#: The opponents by name.
OPPONENTS = {"random": RandomMoves, "lookahead": Lookahead}


def make_opponent(name: str, env_id: str, action_space: Any) -> Any:
    """The opponent ``name`` for the seats of ``env_id``, whose action space is ``action_space``."""
    if name == "lookahead" and not isinstance(action_space, spaces.Discrete):
        raise ConfigError(f"[pettingzoo] opponent \"lookahead\" tries every move and needs a Discrete action space; "
                          f"{env_id!r} has {action_space}: use opponent = \"random\"")
    return OPPONENTS[name]()
