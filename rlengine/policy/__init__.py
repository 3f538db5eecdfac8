"""The saved policy behind :func:`rlengine.load`: a run directory's checkpoint rebuilt for
inference, with no environment and no trainer.

``load`` chooses the checkpoint and takes its cached converted steps (``cache``) or builds the run
(``build``, TensorFlow); the :class:`Policy` users call (``saved``) and the numpy nests it takes
and gives (``arrays``) need no TensorFlow; ``traced`` and ``backends`` trace the steps and convert
them to LiteRT models, the sampling step with its randomness as an input (``noise``); ``lite``
runs them on LiteRT's interpreter (TensorFlow's where LiteRT is missing).

A layer of its own above :mod:`rlengine.run`: serving rests on the engine's build and checkpoints,
and nothing in training imports it. This package imports no TensorFlow: a cached policy runs on
LiteRT and NumPy alone."""
