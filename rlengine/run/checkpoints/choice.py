"""Which checkpoint of a run directory a command or ``rlengine.load`` means.

A run keeps its newest checkpoints in ``<root_dir>/checkpoints/ckpt-<iteration>``
and its best one (by evaluation return) in ``<root_dir>/checkpoints/best/ckpt-<iteration>``,
each counting only once its marker is written (:mod:`rlengine.run.checkpoints.files`).
The best checkpoint holds what acting needs (the algorithm and the transformer
chain), not the replay buffer or the environments' state: it is for evaluating,
exporting and loading, not for resuming. Training writes it
(:mod:`rlengine.run.checkpoints.best`); its marker records ``eval_return``.

A choice is ``"latest"`` (the newest sound checkpoint), ``"best"``, or an
iteration number (a kept newest checkpoint, or the best one if it has that number).
An explicit choice (``best`` or a number) whose files no longer match their
marker is a one-line error naming it: falling back to another checkpoint would
silently evaluate or export something else. ``latest`` falls back past damaged
ones (:func:`rlengine.run.checkpoints.restoring.restore_newest`).
"""

from __future__ import annotations

import os
from typing import Optional, Union

from rlengine.errors import CheckpointChoiceError, DamagedCheckpointError
from rlengine.run.checkpoints.files import checkpoint_dir, damage, marked_checkpoints, newest_sound_checkpoint

BEST = "best"
LATEST = "latest"
Choice = Union[str, int]


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


def recorded_return(marker: Optional[dict]) -> Optional[float]:
    """The ``eval_return`` a best checkpoint's marker records, or None (unreadable, or none recorded)."""
    value = marker.get("eval_return") if marker else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def marked_best(root_dir: str) -> Optional[tuple]:
    """``(iteration, prefix, marker)`` of the marked best checkpoint with the highest recorded return.

    Usually there is one; a kill between marking a new best and removing the
    previous one leaves two, and the higher return is the best (a best is
    written only when it beats the one before). Ties go to the newer iteration.
    """
    found = marked_checkpoints(best_checkpoint_dir(root_dir))
    if not found:
        return None
    return max(found, key=lambda item: (_order(recorded_return(item[2])), item[0]))


def _order(value: Optional[float]) -> float:
    return float("-inf") if value is None else value


def best_return(root_dir: str) -> Optional[float]:
    """The evaluation return recorded with the run's best checkpoint, or None when it has none."""
    best = marked_best(root_dir)
    return None if best is None else recorded_return(best[2])


def chosen_checkpoint(root_dir: str, choice: Choice = LATEST) -> str:
    """The prefix of the sound checkpoint ``choice`` names in ``root_dir``; a one-line error otherwise."""
    choice = parse_choice(choice)
    if choice == LATEST:
        prefix = newest_sound_checkpoint(checkpoint_dir(root_dir))
        if prefix is None:
            raise no_checkpoint_yet(root_dir)
        return prefix
    if choice == BEST:
        return _chosen_best(root_dir)
    return _chosen_iteration(root_dir, int(choice))


def newest_marked(root_dir: str) -> str:
    """The prefix of the newest marked checkpoint of ``root_dir``, damaged or not; one line when none is."""
    marked = marked_checkpoints(checkpoint_dir(root_dir))
    if not marked:
        raise no_checkpoint_yet(root_dir)
    return marked[0][1]


def is_sound(prefix: str) -> bool:
    """Whether the files of checkpoint ``prefix`` match its marker, checksums included."""
    directory, name = os.path.split(prefix)
    number = int(name.rpartition("-")[2])
    marker = next((m for n, _, m in marked_checkpoints(directory) if n == number), None)
    return not damage(directory, number, marker)


def no_checkpoint_yet(root_dir: str) -> CheckpointChoiceError:
    return CheckpointChoiceError(f"no checkpoint in {checkpoint_dir(root_dir)!r} yet: train first (rlengine train "
                                 f"--root-dir {root_dir}), or wait for the run's first checkpoint")


def _chosen_best(root_dir: str) -> str:
    best = marked_best(root_dir)
    if best is None:
        raise CheckpointChoiceError(f"{root_dir!r} has no best checkpoint (training writes it at an evaluation, "
                                    f"and this run has not evaluated yet or has train.eval_interval = 0): use "
                                    f"--checkpoint latest")
    number, prefix, marker = best
    _refuse_if_damaged(best_checkpoint_dir(root_dir), number, prefix, marker, root_dir)
    return prefix


def _chosen_iteration(root_dir: str, number: int) -> str:
    """A sound kept checkpoint of iteration ``number``: the newest ones' first, else the best one."""
    candidates = [(directory, prefix, marker)
                  for directory in (checkpoint_dir(root_dir), best_checkpoint_dir(root_dir))
                  for n, prefix, marker in marked_checkpoints(directory) if n == number]
    for directory, prefix, marker in candidates:
        if not damage(directory, number, marker):
            return prefix
    if candidates:  # every copy of that iteration is damaged: name the first
        directory, prefix, marker = candidates[0]
        _refuse_if_damaged(directory, number, prefix, marker, root_dir)
    raise CheckpointChoiceError(f"{root_dir!r} has no sound checkpoint of iteration {number} (kept: "
                                f"{_kept_text(root_dir)}): use one of those, latest or best")


def _refuse_if_damaged(directory: str, number: int, prefix: str, marker: Optional[dict], root_dir: str) -> None:
    wrong = damage(directory, number, marker)
    if not wrong:
        return
    others = ", ".join(str(n) for n in kept_iterations(root_dir) if n != number) or "none"
    if os.path.basename(directory) == BEST:
        raise DamagedCheckpointError(f"the best checkpoint {prefix} is damaged ({wrong}): use --checkpoint latest "
                                     f"or one of {others}; the next 'rlengine train' of this run sets it aside, "
                                     "and its next evaluation writes a new best")
    raise DamagedCheckpointError(f"checkpoint {prefix} is damaged ({wrong}): choose another one with --checkpoint "
                                 f"(latest, best or one of {others}), or restore its files from a backup")


def _kept_text(root_dir: str) -> str:
    return ", ".join(str(n) for n in kept_iterations(root_dir)) or "none"
