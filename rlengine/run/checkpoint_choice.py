"""Which checkpoint of a run directory a command or ``rlengine.load`` means.

A run keeps its newest checkpoints in ``<root_dir>/checkpoints/ckpt-<iteration>``
and its best one (by evaluation return) in ``<root_dir>/checkpoints/best/ckpt-<iteration>``,
each counting only once its marker is written (:mod:`rlengine.run.checkpoint_files`).
The best checkpoint holds what acting needs (the algorithm and the transformer
chain), not the replay buffer or the environments' state: it is for evaluating,
exporting and loading, not for resuming.

A choice is ``"latest"`` (the newest sound checkpoint), ``"best"``, or an
iteration number (a kept newest checkpoint, or the best one if it has that number).
"""

from __future__ import annotations

import os
from typing import Optional, Union

from rlengine.errors import RLEngineError
from rlengine.run.checkpoint_files import checkpoint_dir, damage, marked_checkpoints, newest_sound_checkpoint

BEST = "best"
LATEST = "latest"
Choice = Union[str, int]


class CheckpointChoiceError(RLEngineError):
    """The checkpoint asked for does not exist or is not a choice."""


def best_checkpoint_dir(root_dir: str) -> str:
    """Where a run's best checkpoint goes: ``<root_dir>/checkpoints/best``."""
    return os.path.join(checkpoint_dir(root_dir), BEST)


def parse_choice(text: Choice) -> Choice:
    """``"latest"``, ``"best"`` or an iteration number from a flag's text; one-line error otherwise."""
    if isinstance(text, int) and not isinstance(text, bool):
        if text < 0:
            raise CheckpointChoiceError(f"checkpoint {text}: an iteration number is 0 or more")
        return text
    word = str(text).strip().lower()
    if word in (LATEST, BEST):
        return word
    if word.isdigit():
        return int(word)
    raise CheckpointChoiceError(f"checkpoint {text!r} is not a choice: use latest, best or an iteration "
                                f"number (rlengine eval RUN --checkpoint best)")


def kept_iterations(root_dir: str) -> list:
    """Iteration numbers of the marked checkpoints of ``root_dir`` (newest and best), newest first."""
    numbers = {n for n, _, _ in marked_checkpoints(checkpoint_dir(root_dir))}
    numbers |= {n for n, _, _ in marked_checkpoints(best_checkpoint_dir(root_dir))}
    return sorted(numbers, reverse=True)


def best_return(root_dir: str) -> Optional[float]:
    """The evaluation return recorded with the run's best checkpoint, or None when it has none."""
    for _, _, marker in marked_checkpoints(best_checkpoint_dir(root_dir)):
        if marker and isinstance(marker.get("eval_return"), (int, float)):
            return float(marker["eval_return"])
    return None


def chosen_checkpoint(root_dir: str, choice: Choice = LATEST) -> str:
    """The prefix of the sound checkpoint ``choice`` names in ``root_dir``; a one-line error otherwise."""
    choice = parse_choice(choice)
    if choice == LATEST:
        prefix = newest_sound_checkpoint(checkpoint_dir(root_dir))
        if prefix is None:
            raise CheckpointChoiceError(f"no checkpoint in {checkpoint_dir(root_dir)!r} yet: train first "
                                        f"(rlengine train --root-dir {root_dir}), or wait for its first checkpoint")
        return prefix
    if choice == BEST:
        prefix = newest_sound_checkpoint(best_checkpoint_dir(root_dir))
        if prefix is None:
            raise CheckpointChoiceError(f"{root_dir!r} has no best checkpoint (it is written at the first "
                                        f"evaluation): use --checkpoint latest")
        return prefix
    for directory in (checkpoint_dir(root_dir), best_checkpoint_dir(root_dir)):
        for number, prefix, marker in marked_checkpoints(directory):
            if number == choice and not damage(directory, number, marker):
                return prefix
    kept = ", ".join(str(n) for n in kept_iterations(root_dir)) or "none"
    raise CheckpointChoiceError(f"{root_dir!r} has no sound checkpoint of iteration {choice} (kept: {kept}): "
                                f"use one of those, latest or best")
