"""The run's best checkpoint: the policy of the evaluation with the highest return so far.

After each evaluation whose ``eval/average_return`` is finite and beats the
best so far, the trainer writes ``<root_dir>/checkpoints/best/ckpt-<iteration>``
(the layout, and what ``--checkpoint best`` means:
:mod:`rlengine.run.checkpoints.choice`). It holds the algorithm and the
transformer chain, under the names every checkpoint gives them, so it
restores wherever a newest checkpoint does (``eval``, ``play``, ``export``,
``rlengine.load``). It holds no replay buffer, counters or environment
state: nothing resumes from it. Its marker records ``iteration``,
``env_steps`` and ``eval_return``; the best so far survives resume because
it is read back from there. A return that is not finite never becomes best,
nor do weights that are not.

Kill-safety follows the rules of the newest checkpoints
(:mod:`rlengine.run.checkpoints.store`): the files are written under a staging
name no reader looks at, renamed to ``ckpt-<n>``, synced and marked (the
marker last); only then are the previous best's files removed, marker
first. A kill at any instant leaves the previous best or the new one
marked. One case cannot keep both: an evaluation of a resumed run that
beats a best of the *same* iteration (the killed process evaluated it, then
died before its checkpoint of it) removes the old marker before renaming
its files into place, so a kill in those milliseconds leaves no best until
the next evaluation writes one.

Resume checks the best checkpoint against its marker and sets a damaged one
aside (``ckpt-<n>.damaged-<time>/``, never deleted) with one warning line;
the next evaluation then writes a new best.

It is not announced through ``rlengine_checkpoint_saved``: that hook says a
checkpoint to resume from was written (its listeners copy, upload or count
resumable checkpoints), which a best checkpoint is not, and announcing it
would report two checkpoints for one iteration.
"""

from __future__ import annotations

import math
import os
import shutil
import sys
import time
from typing import Any, Optional

import tensorflow as tf

from rlengine.files import writing
from rlengine.run.checkpoints.choice import best_checkpoint_dir, marked_best, recorded_return
from rlengine.run.checkpoints.files import FILE_NAME, MARKER, damage, mark_complete, marked_checkpoints, write_tf_index
from rlengine.run.checkpoints.restoring import move_damaged_aside
from rlengine.run.checkpoints.store import first_nonfinite_variable

STAGING = ".staging-"  # ".staging-<pid>.index" etc.: being written; matches no checkpoint name


class BestCheckpoint:
    """Keeps ``checkpoints/best/`` holding the policy of the best evaluation so far (see the module docstring)."""

    def __init__(self, root_dir: str, components: Any):
        self.root_dir = root_dir
        self.directory = best_checkpoint_dir(root_dir)
        self.checkpoint = tf.train.Checkpoint(algorithm=components.algorithm, transformers=components.chain)
        self.best_return: Optional[float] = None  # of the best checkpoint on disk; None: none yet
        self.best_iteration: Optional[int] = None

    def resume(self) -> None:
        """Take the best so far from the markers, after setting damaged best checkpoints aside."""
        for number, prefix, marker in marked_checkpoints(self.directory):
            wrong = damage(self.directory, number, marker)
            if wrong:  # left in place it would stay "best" while no command can restore it
                aside = move_damaged_aside(prefix, number, wrong)
                print(f"rlengine: warning: best checkpoint {prefix} is damaged ({wrong}); set aside as {aside}; "
                      "the run's next evaluation writes a new best", file=sys.stderr)
        best = marked_best(self.root_dir)
        self.best_iteration = None if best is None else best[0]
        self.best_return = None if best is None else recorded_return(best[2])

    def consider(self, iteration: int, env_steps: int, eval_return: float) -> Optional[str]:
        """Write the best checkpoint if ``eval_return`` is finite and beats the best so far; its prefix, or None."""
        eval_return = float(eval_return)
        if not math.isfinite(eval_return):
            return None
        if self.best_return is not None and eval_return <= self.best_return:
            return None
        bad = first_nonfinite_variable(self.checkpoint)
        if bad is not None:  # a lucky score of a diverged model is no policy to keep
            kept = "none" if self.best_iteration is None else f"that of iteration {self.best_iteration}"
            print(f"rlengine: warning: best checkpoint of iteration {iteration} not written: variable {bad!r} "
                  f"is not finite (the best checkpoint stays {kept})", file=sys.stderr)
            return None
        prefix = self._write(iteration, env_steps, eval_return)
        self.best_return, self.best_iteration = eval_return, iteration
        return prefix

    def _write(self, number: int, env_steps: int, eval_return: float) -> str:
        """Stage, rename into place, mark, then remove the previous best (see the module docstring)."""
        os.makedirs(self.directory, exist_ok=True)
        target, staging = os.path.join(self.directory, f"ckpt-{number}"), f"{STAGING}{os.getpid()}"
        # a full disk: the staged (or renamed, unmarked) files go; the previous best stays
        with writing(target, os.path.join(self.directory, staging + "*"), target + ".*"):
            staged = os.path.basename(self.checkpoint.write(os.path.join(self.directory, staging)))
            if os.path.exists(target + MARKER):  # a best of this very iteration: see the module docstring
                os.remove(target + MARKER)
            for name in os.listdir(self.directory):
                if name.startswith(staged + "."):  # .index and .data-*: TF finds the data by the prefix's name
                    os.replace(os.path.join(self.directory, name), target + name[len(staged):])
            mark_complete(self.directory, number, iteration=number, env_steps=env_steps, eval_return=eval_return,
                          time=time.time())
        self._remove_all_but(number)
        write_tf_index(self.directory)  # tf.train.latest_checkpoint("<root_dir>/checkpoints/best") names it
        return target

    def _remove_all_but(self, number: int) -> None:
        """Remove every other best checkpoint (markers first) and what killed writes left behind."""
        names = sorted(os.listdir(self.directory), key=lambda name: not name.endswith(MARKER))
        for name in names:
            match = FILE_NAME.match(name)
            stale = match and (int(match.group(1)) != number or ".tmp-" in name or "_temp" in name)
            if stale or name.startswith((STAGING, "checkpoint.tmp-")):
                _remove(os.path.join(self.directory, name))


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.remove(path)
