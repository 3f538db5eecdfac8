"""One training run, whichever pipeline it has: engine, build, spec preparation, trainer,
evaluator, checkpoints, signals, TensorFlow runtime sizing."""

from rlengine.quiet_tensorflow import import_tensorflow

import_tensorflow()
