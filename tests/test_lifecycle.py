"""The exact order of lifecycle hook calls, on success and on failure."""

import pytest

from rlengine import hookimpl
from rlengine.engine import Engine
from rlengine.testing import HookRecorder, testing_plugin, tiny_config


def _engine(tmp_path, recorder, extra=(), **train):
    return Engine(tiny_config(str(tmp_path), **train),
                  extra_plugins=[("testing", testing_plugin()), ("recorder", recorder), *extra])


def test_hook_order_of_a_short_run(tmp_path):
    recorder = HookRecorder()
    _engine(tmp_path, recorder, checkpoint_interval=3).train()
    assert recorder.calls == [
        "configure", "train_start",
        "iteration_end:1", "iteration_end:2", "evaluation_end:2",
        "iteration_end:3", "checkpoint_saved:3",
        "iteration_end:4", "evaluation_end:4", "checkpoint_saved:4",
        "train_end",
    ]


class Boom:
    @hookimpl
    def rlengine_iteration_end(self, run, iteration, metrics):
        if iteration == 2:
            raise RuntimeError("boom")


def test_train_end_runs_when_the_run_fails_and_environments_close(tmp_path):
    recorder = HookRecorder()
    engine = _engine(tmp_path, recorder, extra=[("boom", Boom())])
    closed = []

    class Spy:
        @hookimpl
        def rlengine_train_start(self, run):
            closed.append(run.components.env)

    engine.plugins.manager.register(Spy(), name="spy")
    with pytest.raises(RuntimeError, match="boom"):
        engine.train()
    assert recorder.calls[-1] == "train_end:RuntimeError"
    assert closed[0].closed


def test_target_return_stops_early(tmp_path):
    recorder = HookRecorder()
    result = _engine(tmp_path, recorder, target_return=1.0, num_env_steps=10_000).train()
    assert result.reached_target and result.iterations == 2
    assert recorder.calls[-3:] == ["evaluation_end:2", "checkpoint_saved:2", "train_end"]


def test_evaluate_restores_the_newest_checkpoint(tmp_path):
    from rlengine.errors import RLEngineError

    engine = _engine(tmp_path, HookRecorder())
    with pytest.raises(RLEngineError, match="no checkpoint"):
        engine.evaluate()
    trained = engine.train()
    fresh = Engine(tiny_config(str(tmp_path)), extra_plugins=[("testing", testing_plugin())])
    result = fresh.evaluate(num_episodes=3)
    assert result["eval/episodes"] == 3.0
    assert result["eval/average_return"] == trained.eval_return == 8.0  # the learnt policy, not a fresh one


def test_engine_is_public_api():
    import rlengine

    assert "Engine" in rlengine.__all__ and rlengine.Engine is Engine


def test_choosing_an_algorithm_or_env_starts_from_plain_defaults_not_the_demo():
    # The embedded demo is tuned for PPO on CartPole (target 475); it must not leak into other runs.
    engine = Engine(None, ["train.algorithm=toy", "train.env=counting", 'train.writers=["memory"]'],
                    extra_plugins=[("testing", testing_plugin())])
    assert engine.config.train.target_return is None
    assert "ppo" not in engine.config.sections
