"""Restoring the newest loadable checkpoint of a run, falling back past damaged ones.

Shared by resume (:class:`rlengine.run.checkpoints.store.RunCheckpoints`) and the
commands that read a run directory (``eval``, ``play``, ``export`` through
:meth:`rlengine.Engine.restored`). A checkpoint is *damaged* when its files
do not match its marker (:func:`rlengine.run.checkpoints.files.damage`) or
TensorFlow cannot read them (:func:`rlengine.run.checkpoints.reading.unreadable`,
asked when a restore fails); it is skipped with one warning line. Resume also sets it aside, so that iteration is saved again;
the read-only commands leave the directory as it is (a training process
may be pruning it at that moment). A checkpoint that reads whole but does
not fit the run (another algorithm or network shape) is a different error,
raised at once: an older checkpoint of the same run would not fit either.
Every command that restores a run directory's checkpoint comes here: resume,
``eval``, ``play``, ``export`` and :func:`rlengine.load`.

A checkpoint chosen explicitly (``--checkpoint best`` or an iteration
number, :mod:`rlengine.run.checkpoints.choice`) has no fallback:
:func:`restore_chosen` restores that one or stops with one line naming it.
The best checkpoint (``checkpoints/best/``) is never what resume restores;
it is checked and set aside by :mod:`rlengine.run.checkpoints.best`, with
:func:`move_damaged_aside` as here.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any, Callable, Optional

import tensorflow as tf

from rlengine.errors import (
    CheckpointError,
    CheckpointMismatchError,
    DamagedCheckpointError,
)
from rlengine.run.checkpoints.choice import BEST, LATEST, Choice, chosen_checkpoint, no_checkpoint_yet, parse_choice
from rlengine.run.checkpoints.files import MARKER, checkpoint_dir, damage, marked_checkpoints, set_aside
from rlengine.run.checkpoints.reading import READ_ERRORS, tensorflow_line, unreadable

_SHOWN = 240  # characters of TensorFlow's message kept in a one-line error


def restore_newest(directory: str, restore: Callable[[str], object], *, set_damaged_aside: bool) -> Optional[str]:
    """``restore(prefix)`` the newest checkpoint that is sound and loads; its prefix, or None if none is marked.

    ``set_damaged_aside``: move the damaged checkpoints newer than the one
    restored out of the way (resume); otherwise only warn (read-only commands).
    Raises :class:`CheckpointMismatchError` or :class:`DamagedCheckpointError`.
    """
    damaged: list[tuple[int, str, str]] = []  # (number, prefix, what is wrong), newest first
    for number, prefix, marker in marked_checkpoints(directory):
        wrong = damage(directory, number, marker) or _restore_damage(prefix, restore)
        if not wrong:
            _report(damaged, prefix, set_damaged_aside)
            return prefix
        if set_damaged_aside or os.path.exists(prefix + MARKER):  # else pruned by a training run meanwhile
            damaged.append((number, prefix, wrong))
    if damaged:
        found = "; ".join(f"{os.path.basename(prefix)}: {wrong}" for _, prefix, wrong in damaged[:3])
        found += f"; and {len(damaged) - 3} more" if len(damaged) > 3 else ""
        raise DamagedCheckpointError(
            f"every checkpoint in {directory!r} is damaged ({found}); nothing was changed: restore them from "
            "a backup, or train into a new --root-dir")
    return None


def checked_choice(root_dir: str, choice: Choice) -> Optional[str]:
    """What ``choice`` names in ``root_dir``, checked before anything is built; one-line errors.

    The prefix of ``best`` or an iteration number (sound, see
    :func:`~rlengine.run.checkpoints.choice.chosen_checkpoint`); None for
    ``latest``, once some checkpoint is marked (which one loads is found
    while restoring, past damaged ones).
    """
    choice = parse_choice(choice)
    if choice != LATEST:
        return chosen_checkpoint(root_dir, choice)
    if not marked_checkpoints(checkpoint_dir(root_dir)):
        raise no_checkpoint_yet(root_dir)
    return None


def restore_choice(root_dir: str, chosen: Optional[str], restore: Callable[[str], object]) -> str:
    """Restore ``chosen`` (from :func:`checked_choice`), or for None the newest that loads; its prefix.

    The read-only commands' way: damaged newest checkpoints are skipped with a
    warning and left in place (a training run may own them).
    """
    if chosen is not None:
        if not os.path.exists(chosen + MARKER) and os.path.basename(os.path.dirname(chosen)) == BEST:
            chosen = chosen_checkpoint(root_dir, BEST)  # a training run wrote a better one while this built
        return restore_chosen(chosen, restore)
    directory = checkpoint_dir(root_dir)
    prefix = restore_newest(directory, restore, set_damaged_aside=False)
    if prefix is None:  # every marker vanished meanwhile: pruned by a running train
        raise CheckpointError(f"no checkpoint in {directory!r} is left to restore (a training run pruned them "
                              "meanwhile): run the command again")
    return prefix


def restore_chosen(prefix: str, restore: Callable[[str], object]) -> str:
    """``restore(prefix)`` exactly that checkpoint (already checked against its marker); its prefix.

    What TensorFlow cannot read is :class:`DamagedCheckpointError` naming it;
    a checkpoint removed while it was read (a training run replaced its best)
    says to run again; one of another network is :class:`CheckpointMismatchError`.
    """
    wrong = _restore_damage(prefix, restore)
    if wrong and not os.path.exists(prefix + MARKER):
        raise CheckpointError(f"checkpoint {prefix} was removed while it was read (a training run replaced "
                              "it meanwhile): run the command again")
    if wrong:
        raise DamagedCheckpointError(f"checkpoint {prefix} is damaged ({wrong}): choose another one with "
                                     "--checkpoint, or restore its files from a backup")
    return prefix


def _restore_damage(prefix: str, restore: Callable[[str], object]) -> str:
    """Restore ``prefix``; "" when it worked, what TensorFlow could not read when the files are damaged.

    A restore that fails on files TensorFlow reads whole means the
    checkpoint does not fit this run; any other failure is raised as it is.
    """
    try:
        restore(prefix)
    except Exception as exc:  # noqa: BLE001 - classified below; what is neither damage nor a mismatch is re-raised
        wrong = tensorflow_line(exc) if isinstance(exc, READ_ERRORS) else unreadable(prefix)
        if wrong:
            return f"unreadable: {_shortened(wrong)}"
        if not isinstance(exc, (tf.errors.OpError, AssertionError, ValueError)):
            raise
        difference = _first_difference(exc)
        raise CheckpointMismatchError(
            f"checkpoint {prefix} was written by a run with another algorithm or network shape (first "
            f"difference: {difference}): use the config it was trained with, or train into a new --root-dir",
            prefix, difference) from None
    return ""


def expect_partial_restores(trace: Any) -> None:
    """Mark the restores a failed ``Checkpoint.restore`` left behind as partial on purpose.

    A restore that raises (another network shape, ``--force`` onto another config) never returns the
    status whose ``expect_partial()`` would say so; TensorFlow then lists every value of the checkpoint
    left unrestored when its restore coordinator is collected (13 warnings after the one line that
    names the checkpoint and the fix). The failure itself is ours to report, and is: so the coordinator,
    found among the failing frames' locals, is told what its status would have been.
    """
    while trace is not None:
        for value in trace.tb_frame.f_locals.values():
            if type(value).__name__ == "_CheckpointRestoreCoordinator" and hasattr(value, "expect_partial"):
                value.expect_partial = True
        trace = trace.tb_next


def _first_difference(error: BaseException) -> str:
    line = tensorflow_line(error)
    unmatched = re.search(r"Found (\d+) Python objects .*?: \[(<[^<]*?)(?:, numpy=.*?)?>", line)
    if isinstance(error, AssertionError) and unmatched:  # TF lists every unmatched object: name the first
        count, first = int(unmatched.group(1)), unmatched.group(2)
        more = f" (and {count - 1} more objects)" if count > 1 else ""
        line = f"this run's {first}>{more} is not in the checkpoint"
    return _shortened(line)


def _shortened(text: str) -> str:
    return text if len(text) <= _SHOWN else text[:_SHOWN - 3] + "..."


def _report(damaged: list, restored: str, set_damaged_aside: bool) -> None:
    """One warning line per damaged checkpoint skipped on the way to ``restored``."""
    for number, prefix, wrong in damaged:
        if set_damaged_aside:
            done = f"set aside as {move_damaged_aside(prefix, number, wrong)}; resuming from"
        else:
            done = "left in place (the next 'rlengine train' of this run sets it aside); using"
        print(f"rlengine: warning: checkpoint {prefix} is damaged ({wrong}); {done} "
              f"{os.path.basename(restored)}", file=sys.stderr)


def move_damaged_aside(prefix: str, number: int, wrong: str) -> str:
    """Move the damaged checkpoint away, or stop: left in place, it would keep its iteration from being saved."""
    try:
        return set_aside(os.path.dirname(prefix), number)
    except OSError as exc:
        raise CheckpointError(f"checkpoint {prefix} is damaged ({wrong}) and cannot be set aside "
                              f"({exc.strerror or exc}): move its files out of {os.path.dirname(prefix)}, "
                              "then resume") from None
