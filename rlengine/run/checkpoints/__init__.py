"""The run directory and its checkpoints: the directory's layout and ownership (``rundir``), the
files of one checkpoint written atomically (``files``), the run's checkpoint store (``store``),
when to write one (``schedule``), which to restore (``choice``, ``restoring``), what TensorFlow
cannot read (``reading``), the best one (``best``) and the specs file :func:`rlengine.load` reads
(``saved_specs``)."""
