"""The exact order of lifecycle hook calls, on success and on failure."""

import pytest

from rlengine import hookimpl
from rlengine.run.engine import Engine
from rlengine.testing import HookRecorder, TrackedCountingEnv, testing_plugin, tiny_config, tracked_env_plugin


def _engine(tmp_path, recorder, extra=(), **train):
    return Engine(tiny_config(str(tmp_path), **train),
                  extra_plugins=[("testing", testing_plugin()), ("recorder", recorder), *extra])


@pytest.mark.parametrize("algorithm, driver", [("toy", "sync"), ("toy-q", "sync"),  # on- and off-policy
                                               ("toy", "async"), ("toy-q", "async")])  # threads and queues
def test_hook_order_of_a_short_run(tmp_path, algorithm, driver):
    recorder = HookRecorder()
    raw = tiny_config(str(tmp_path), algorithm=algorithm, checkpoint_interval=3)
    if driver == "async":  # an iteration is one thread's unroll: 1 copy x 8 steps, as many as the sync run's
        raw["train"].update(pipeline="async", num_envs=2, unroll_length=8)
        raw["async"] = {"num_env_threads": 2, "learner_queue_capacity": 1}
    engine = Engine(raw, extra_plugins=[("testing", testing_plugin()), ("recorder", recorder)])
    assert recorder.calls == ["configure"]  # when the engine is built, before anything runs
    engine.train()
    # 4 iterations of 2 copies x 4 steps; evaluations every 2, checkpoints every 3 and at the end.
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
    TrackedCountingEnv.made = []
    engine = _engine(tmp_path, recorder, extra=[("boom", Boom()), ("tracked", tracked_env_plugin())], env="tracked")
    with pytest.raises(Exception, match="boom") as raised:  # the core may wrap it to name the plugin
        engine.train()
    # Boom (registered after the recorder) runs first at iteration 2, so the recorder never sees it;
    # after the failure only the last checkpoint (iteration 2 is complete) and train_end, with the exception.
    assert recorder.calls == ["configure", "train_start", "iteration_end:1", "checkpoint_saved:2",
                              f"train_end:{type(raised.value).__name__}"]
    assert len(TrackedCountingEnv.made) == 2 and all(env.closed for env in TrackedCountingEnv.made)  # train and eval


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
