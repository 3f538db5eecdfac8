"""rlengine-optuna: the ``rlengine tune`` command, hyperparameter search on Optuna.

:mod:`.plugin` registers the command; :mod:`.tuner` runs a study
(:class:`~rlengine_optuna.tuner.Tuner`, also usable from Python).
"""
