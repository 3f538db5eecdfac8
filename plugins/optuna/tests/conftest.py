"""Fixtures of the rlengine-optuna tests: tune settings on the testing kit (a study of a few trials
takes a few seconds)."""

import pytest

from rlengine.testing import testing_plugin, tiny_config


@pytest.fixture(autouse=True)
def _state_key_outside_home(tmp_path_factory, monkeypatch):
    """Runs sign their env state with a per-user key: tests use one of their own, not ~/.config's."""
    monkeypatch.setenv("RLENGINE_STATE_KEY_FILE", str(tmp_path_factory.getbasetemp() / "state-key"))


@pytest.fixture
def kit_settings(tmp_path):
    """TuneSettings keywords: the counting env's episode length tuned for the toy algorithm, whose
    evaluation return is about twice the episode length once it learned (reward 1 + action). Eager:
    a run this short takes half the time untraced."""

    def make(**changes):
        values = dict(config=tiny_config(num_env_steps=32, eager=True), params=["counting.episode_length=int:2:6"], trials=2,
                      tune_dir=str(tmp_path / "tune"), extra_plugins=(("testing", testing_plugin()),),
                      startup_trials=1, last_evals=2, pruner="none")
        values.update(changes)
        return values

    return make
