"""``Run.request_stop``: a hook ends the run after the current iteration as a normal finish (a last
checkpoint, no error), and ``TrainResult.stop_reason`` says why."""

import os

import pytest

from rlengine import hookimpl
from rlengine.api.run import Run
from rlengine.config.schema import RunConfig
from rlengine.run.checkpoints.store import newest_checkpoint
from rlengine.run.engine import Engine
from rlengine.testing import HookRecorder, testing_plugin, tiny_config


class StopAt:
    """Asks the run to stop from one hook, at one iteration."""

    def __init__(self, hook: str, iteration: int, reason: str = "enough"):
        self.hook, self.iteration, self.reason = hook, iteration, reason

    def _maybe(self, hook, run, iteration):
        if hook == self.hook and iteration == self.iteration:
            run.request_stop(self.reason)

    @hookimpl
    def rlengine_iteration_end(self, run, iteration, metrics):
        self._maybe("iteration_end", run, iteration)

    @hookimpl
    def rlengine_evaluation_end(self, run, iteration, metrics):
        self._maybe("evaluation_end", run, iteration)


def _train(tmp_path, stopper, **train):
    recorder = HookRecorder()
    engine = Engine(tiny_config(str(tmp_path), **train),
                    extra_plugins=[("testing", testing_plugin()), ("recorder", recorder), ("stopper", stopper)])
    return engine.train(), recorder.calls


def test_a_stop_requested_at_an_evaluation_ends_the_run_after_that_iteration_with_a_checkpoint(tmp_path):
    # 8 iterations of 2 copies x 4 steps; evaluations every 2
    result, calls = _train(tmp_path, StopAt("evaluation_end", 4, "pruned by the tuner"), num_env_steps=64)

    assert result.stop_reason == "pruned by the tuner"
    assert (result.iterations, result.env_steps) == (4, 32)
    assert calls[-4:] == ["iteration_end:4", "evaluation_end:4", "checkpoint_saved:4", "train_end"]  # no error
    assert [steps for steps, _, _ in result.eval_history] == [16, 32]
    assert newest_checkpoint(str(tmp_path)).endswith("4")


def test_a_stop_requested_after_an_iteration_works_without_evaluations(tmp_path):
    result, calls = _train(tmp_path, StopAt("iteration_end", 3), num_env_steps=64, eval_interval=0)

    assert result.stop_reason == "enough" and result.iterations == 3
    assert "iteration_end:4" not in calls and calls[-2:] == ["checkpoint_saved:3", "train_end"]


def test_a_stop_requested_in_the_last_iteration_is_no_early_stop(tmp_path):
    result, _ = _train(tmp_path, StopAt("evaluation_end", 4), num_env_steps=32)

    assert result.stop_reason is None and result.env_steps == 32


def test_a_run_stopped_early_continues_to_its_budget_when_trained_again(tmp_path):
    _train(tmp_path, StopAt("iteration_end", 2), num_env_steps=32)
    result, calls = _train(tmp_path, StopAt("iteration_end", 99), num_env_steps=32)  # never stops

    assert result.stop_reason is None and result.env_steps == 32
    assert calls[1:3] == ["train_start", "iteration_end:3"]  # resumed from the checkpoint of iteration 2
    assert os.path.isdir(os.path.join(str(tmp_path), "checkpoints"))


def test_the_first_reason_is_kept_and_a_reason_is_required():
    run = Run(RunConfig(), "", None, None, None)
    assert run.stop_reason is None

    run.request_stop("  first  ")
    run.request_stop("second")
    assert run.stop_reason == "first"
    with pytest.raises(ValueError, match="needs a reason"):
        run.request_stop(" ")
