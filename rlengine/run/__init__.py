"""One training run, whichever pipeline it has: the engine, the build of its components, spec
preparation, the trainer's loop, evaluation, callbacks and the remote-collection kit.

Two concerns live in folders of their own: :mod:`rlengine.run.checkpoints` (the run directory,
checkpoints, choosing and restoring one) and :mod:`rlengine.run.process` (the process a run
lives in: TensorFlow runtime sizing, memory checks, signals, start-up lines).

Unlike the other subpackages that use TensorFlow, this one does not import it on import: the run
directory's modules (``checkpoints.rundir``, ``checkpoints.files``, ``checkpoints.choice``) are
read without it, by :func:`rlengine.load` of a cached policy. Whoever enters the modules that use
it imports it quietly first (:func:`rlengine.quiet_tensorflow.import_tensorflow`): the ``rlengine``
facade, the ``train`` command, the test kit and the policy's build.
"""
