"""The saved policy behind :func:`rlengine.load`: a run directory's checkpoint rebuilt for
inference, with no environment and no trainer (``load``), the :class:`Policy` users call
(``saved``), its backends, the traced TensorFlow step and its Lite conversion (``backends``), and
the numpy nests it takes and gives (``arrays``).

A layer of its own above :mod:`rlengine.run`: serving rests on the engine's build and checkpoints,
and nothing in training imports it."""
