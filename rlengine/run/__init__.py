"""One training run, whichever pipeline it has: the engine, the build of its components, spec
preparation, the trainer's loop, evaluation, callbacks and the remote-collection kit.

Two concerns live in folders of their own: :mod:`rlengine.run.checkpoints` (the run directory,
checkpoints, choosing and restoring one) and :mod:`rlengine.run.process` (the process a run
lives in: TensorFlow runtime sizing, memory checks, signals, start-up lines)."""

from rlengine.quiet_tensorflow import import_tensorflow

import_tensorflow()
