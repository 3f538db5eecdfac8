"""The study's sampler: TPE, whose random startup trials are drawn by trial number.

Trial ``k`` of the first ``startup_trials`` draws its values from a random generator seeded by
``(seed, k)``, whoever asks for it and whenever: a tune with ``--jobs N`` trains the same startup
trials as the same tune one trial after another, and a resumed tune's new trials draw new values
(their numbers are new). The trials after them are TPE's, which models the finished trials; with
several jobs those are finished in another order, so TPE's proposals may differ from a sequential
tune's.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import optuna


class SeededStartup(optuna.samplers.BaseSampler):
    """``tpe`` for every trial but the first ``startup_trials``, which are drawn at random by trial number."""

    def __init__(self, seed: int, startup_trials: int, tpe: optuna.samplers.BaseSampler):
        self.seed, self.startup_trials, self.tpe = seed, startup_trials, tpe
        self._random: dict = {}  # trial number -> its own random sampler (its values drawn in suggestion order)

    def _is_startup(self, trial: Any) -> bool:
        return trial.number < self.startup_trials

    def infer_relative_search_space(self, study: Any, trial: Any) -> dict:
        return {} if self._is_startup(trial) else self.tpe.infer_relative_search_space(study, trial)

    def sample_relative(self, study: Any, trial: Any, search_space: dict) -> dict:
        return {} if self._is_startup(trial) else self.tpe.sample_relative(study, trial, search_space)

    def sample_independent(self, study: Any, trial: Any, param_name: str, param_distribution: Any) -> Any:
        if not self._is_startup(trial):
            return self.tpe.sample_independent(study, trial, param_name, param_distribution)
        if trial.number not in self._random:
            seed = int(np.random.SeedSequence([self.seed, trial.number]).generate_state(1)[0])
            self._random[trial.number] = optuna.samplers.RandomSampler(seed=seed)
        return self._random[trial.number].sample_independent(study, trial, param_name, param_distribution)

    def before_trial(self, study: Any, trial: Any) -> None:
        self.tpe.before_trial(study, trial)

    def after_trial(self, study: Any, trial: Any, state: Any, values: Any) -> None:
        self._random.pop(trial.number, None)
        self.tpe.after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:
        self.tpe.reseed_rng()
