"""The best checkpoint (``checkpoints/best/``): written when an evaluation beats the best so far, kill-safe,
kept through resume and pruning, and chosen by ``--checkpoint best|latest|N`` with one-line errors.

Evaluations return scripted averages (the toy learns its best action within an
iteration, so its real returns would all tie); the weights are the real ones.
"""

from __future__ import annotations

import json
import os
import types

import numpy as np
import pytest
import tensorflow as tf

from rlengine.errors import RLEngineError
from rlengine.run.checkpoints.best import BestCheckpoint
from rlengine.run.checkpoints.choice import (
    CheckpointChoiceError,
    best_checkpoint_dir,
    best_return,
    chosen_checkpoint,
    marked_best,
)
from rlengine.run.checkpoints.files import complete_checkpoints, newest_sound_checkpoint
from rlengine.run.checkpoints.restoring import checked_choice, restore_choice
from rlengine.run.engine import Engine
from rlengine.run.evaluator import Evaluator
from rlengine.testing import testing_plugin, tiny_config

NAN, INF = float("nan"), float("inf")


def _engine(root, force=False, **train) -> Engine:
    config = tiny_config(str(root), eval_interval=1, checkpoint_interval=1, **train)
    return Engine(config, extra_plugins=[("testing", testing_plugin())], force=force)


@pytest.fixture
def script(monkeypatch):
    """Evaluations return ``script.returns`` in turn (while any are left); records the weights and every best write."""
    state = types.SimpleNamespace(returns=[], weights=[], written=[])
    evaluate, write = Evaluator.run, BestCheckpoint._write

    def scripted_run(self):
        metrics = evaluate(self)
        if state.returns:
            metrics["eval/average_return"] = state.returns.pop(0)
            state.weights.append([v.numpy().copy() for v in self.algorithm.variables])
        return metrics

    def recorded_write(self, number, env_steps, eval_return):
        state.written.append(number)
        return write(self, number, env_steps, eval_return)

    monkeypatch.setattr(Evaluator, "run", scripted_run)
    monkeypatch.setattr(BestCheckpoint, "_write", recorded_write)
    return state


def _best_names(root) -> list:
    return sorted(os.listdir(best_checkpoint_dir(str(root))))


def _marker(prefix) -> dict:
    with open(prefix + ".complete") as f:
        return json.load(f)


def _restored_weights(engine, choice) -> list:
    with engine.restored(choice) as parts:
        return [v.numpy().copy() for v in parts.algorithm.variables]


# -- written by training ------------------------------------------------------------------------
def test_the_best_is_written_only_when_an_evaluation_beats_the_best_so_far(tmp_path, script):
    script.returns = [5.0, 7.0, 6.0, NAN, 9.0, 9.0]
    weights = script.weights
    _engine(tmp_path, num_env_steps=48).train()

    assert script.written == [1, 2, 5]  # 6 is worse, NaN is never best, the tie of 6 does not replace 5
    assert _best_names(tmp_path) == ["checkpoint", "ckpt-5.complete", "ckpt-5.data-00000-of-00001", "ckpt-5.index"]
    prefix = chosen_checkpoint(str(tmp_path), "best")
    assert {k: _marker(prefix)[k] for k in ("iteration", "env_steps", "eval_return")} == {
        "iteration": 5, "env_steps": 40, "eval_return": 9.0}
    assert tf.train.latest_checkpoint(best_checkpoint_dir(str(tmp_path))) == prefix  # TF's own index agrees
    engine = _engine(tmp_path, num_env_steps=48)
    restored = _restored_weights(engine, "best")
    assert not all(np.array_equal(a, b) for a, b in zip(weights[4], weights[5]))  # so equality says something
    assert all(np.array_equal(a, b) for a, b in zip(restored, weights[4]))  # the weights that scored 9
    assert engine.newest_checkpoint("best") == prefix and engine.newest_checkpoint().endswith("checkpoints/ckpt-6")


def test_a_return_that_is_not_finite_never_becomes_best(tmp_path, script):
    script.returns = [NAN, INF, -INF, 3.0]
    _engine(tmp_path).train()

    assert script.written == [4]
    assert best_return(str(tmp_path)) == 3.0


def test_the_best_so_far_survives_resume(tmp_path, script):
    script.returns = [5.0, 9.0, 6.0]
    _engine(tmp_path, num_env_steps=24).train()
    assert best_return(str(tmp_path)) == 9.0 and script.written == [1, 2]

    script.returns, script.written = [8.0, 10.0, 4.0], []
    result = _engine(tmp_path, force=True, num_env_steps=48).train()  # a larger budget: the same run goes on

    assert len(result.eval_history) == 3  # resumed from checkpoints/ckpt-3, not from best/ckpt-2
    assert script.written == [5]  # 8 did not beat the 9 of the first process
    assert marked_best(str(tmp_path))[0] == 5 and best_return(str(tmp_path)) == 10.0


def test_resume_never_starts_from_the_best_checkpoint(tmp_path, script):
    script.returns = [5.0, 9.0, 6.0]
    _engine(tmp_path, num_env_steps=24).train()
    for _, prefix, _ in complete_checkpoints(os.path.join(tmp_path, "checkpoints")):
        for suffix in (".complete", ".index", ".data-00000-of-00001"):
            os.remove(prefix + suffix)

    script.returns, script.written = [1.0, 2.0, 3.0], []
    result = _engine(tmp_path, num_env_steps=24).train()

    assert result.iterations == 3 and len(result.eval_history) == 3  # from scratch: best/ holds no run state
    assert script.written == [] and marked_best(str(tmp_path))[0] == 2  # and the best so far still counts


def test_pruning_old_checkpoints_leaves_the_best_one(tmp_path, script):
    script.returns = [9.0, 1.0, 2.0, 3.0]
    _engine(tmp_path, keep_checkpoints=1).train()

    assert [n for n, _, _ in complete_checkpoints(os.path.join(tmp_path, "checkpoints"))] == [4]
    assert chosen_checkpoint(str(tmp_path), "best").endswith(os.path.join("best", "ckpt-1"))
    assert chosen_checkpoint(str(tmp_path), 1) == chosen_checkpoint(str(tmp_path), "best")  # by its number too


# -- kill-safety, on the writer alone ---------------------------------------------------------------
class Killed(BaseException):
    """Stands in for SIGKILL: nothing after it runs."""


def _writer(root, value=1.0) -> BestCheckpoint:
    policy = tf.Module()
    policy.w = tf.Variable([value, 2.0])
    return BestCheckpoint(str(root), types.SimpleNamespace(algorithm=policy, chain=tf.Module()))


def _kill_at(monkeypatch, call: int) -> None:
    """Raise :class:`Killed` instead of the ``call``-th file rename or removal from now on."""
    count = [0]

    def wrap(real):
        def file_operation(*args, **kwargs):
            count[0] += 1
            if count[0] == call:
                raise Killed
            return real(*args, **kwargs)
        return file_operation

    for name in ("replace", "remove", "rmdir", "unlink"):
        monkeypatch.setattr(os, name, wrap(getattr(os, name)))


@pytest.mark.parametrize("new_iteration, may_have_none", [(7, False), (3, True)])
def test_a_kill_at_any_file_operation_leaves_the_old_or_the_new_best(tmp_path, monkeypatch, new_iteration,
                                                                     may_have_none):
    """(7, ...): a new iteration; (3, ...): a resumed run beating a best of the same iteration, whose
    one window without a best the module docstring owns up to."""
    for call in range(1, 40):
        root = tmp_path / str(call)
        _writer(root).consider(3, 24, 5.0)
        with monkeypatch.context() as patch:
            _kill_at(patch, call)
            try:
                _writer(root, value=4.0).consider(new_iteration, 56, 6.0)
                finished = True
            except Killed:
                finished = False
        best = marked_best(str(root))
        assert best is not None or may_have_none, call
        if best is not None:
            assert newest_sound_checkpoint(best_checkpoint_dir(str(root))) is not None
            chosen = chosen_checkpoint(str(root), "best")  # sound, or this raises
            assert (best[0], _marker(chosen)["eval_return"]) in [(3, 5.0), (new_iteration, 6.0)], call
        after = _writer(root)  # the next process: resume, then a better evaluation
        after.resume()
        after.consider(8, 64, 7.0)
        assert _best_names(root) == ["checkpoint", "ckpt-8.complete", "ckpt-8.data-00000-of-00001", "ckpt-8.index"]
        if finished:
            break
    assert finished, "the write never finished: the kill points ran out"


def test_of_two_marked_bests_the_higher_return_counts_and_the_next_write_removes_the_other(tmp_path, monkeypatch):
    # a process evaluated iteration 10 (return 5) and died; resumed from 4, it scores 6 at iteration 6,
    # marks it, and is killed before removing the best of iteration 10
    _writer(tmp_path).consider(10, 80, 5.0)
    with monkeypatch.context() as patch:
        patch.setattr(BestCheckpoint, "_remove_all_but", lambda self, number: None)
        _writer(tmp_path).consider(6, 48, 6.0)
    assert chosen_checkpoint(str(tmp_path), "best").endswith("ckpt-6") and best_return(str(tmp_path)) == 6.0

    resumed = _writer(tmp_path)
    resumed.resume()
    assert resumed.consider(7, 56, 5.5) is None  # 5.5 beats the older best, not the best
    resumed.consider(9, 72, 6.5)
    assert [name for name in _best_names(tmp_path) if name.endswith(".complete")] == ["ckpt-9.complete"]


def test_leftovers_of_killed_writes_are_ignored_then_removed(tmp_path):
    directory = best_checkpoint_dir(str(tmp_path))
    os.makedirs(os.path.join(directory, "ckpt-4_temp"))
    for name in (".staging-99999.index", "ckpt-3.index", "checkpoint.tmp-12", "ckpt-3.complete.tmp-12"):
        with open(os.path.join(directory, name), "w") as f:
            f.write("torn")
    with pytest.raises(CheckpointChoiceError, match="has no best checkpoint"):
        chosen_checkpoint(str(tmp_path), "best")  # nothing marked: nothing counts

    _writer(tmp_path).consider(5, 40, 1.0)
    assert _best_names(tmp_path) == ["checkpoint", "ckpt-5.complete", "ckpt-5.data-00000-of-00001", "ckpt-5.index"]


def test_weights_that_are_not_finite_are_never_best(tmp_path, capsys):
    assert _writer(tmp_path, value=NAN).consider(2, 16, 8.0) is None
    assert not os.path.exists(best_checkpoint_dir(str(tmp_path)))
    assert "best checkpoint of iteration 2 not written: variable " in capsys.readouterr().err


# -- choosing: one-line errors --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def never_evaluated(tmp_path_factory):
    root = tmp_path_factory.mktemp("never") / "run"
    Engine(tiny_config(str(root), eval_interval=0, checkpoint_interval=2),
           extra_plugins=[("testing", testing_plugin())]).train()
    return root


@pytest.mark.parametrize("choice, expected", [
    ("best", r"^'.*run' has no best checkpoint \(training writes it at an evaluation, and this run has not "
             r"evaluated yet or has train.eval_interval = 0\): use --checkpoint latest$"),
    (3, r"^'.*run' has no sound checkpoint of iteration 3 \(kept: 4, 2\): use one of those, latest or best$"),
    ("newest", r"^checkpoint 'newest' is not a choice: use latest, best or an iteration number"),
])
def test_a_checkpoint_choice_that_names_nothing_is_one_line(never_evaluated, choice, expected):
    engine = Engine(tiny_config(str(never_evaluated), eval_interval=0, checkpoint_interval=2),
                    extra_plugins=[("testing", testing_plugin())])
    with pytest.raises(CheckpointChoiceError, match=expected) as caught:
        engine.evaluate(num_episodes=1, checkpoint=choice)
    assert "\n" not in str(caught.value) and isinstance(caught.value, RLEngineError)
    assert engine.evaluate(num_episodes=1, checkpoint=2)["eval/episodes"] == 1  # a kept number works


def test_a_best_replaced_while_a_command_builds_is_chosen_again_and_one_removed_while_read_says_so(tmp_path):
    _writer(tmp_path).consider(3, 24, 5.0)
    chosen = checked_choice(str(tmp_path), "best")  # before the command builds its run
    _writer(tmp_path).consider(4, 32, 6.0)  # meanwhile a training run writes a better best

    restored = []
    assert restore_choice(str(tmp_path), chosen, restored.append).endswith(os.path.join("best", "ckpt-4"))
    assert restored == [chosen_checkpoint(str(tmp_path), "best")]

    def pruned_meanwhile(prefix):
        os.remove(prefix + ".complete")
        raise tf.errors.NotFoundError(None, None, f"{prefix}.index; No such file or directory")

    with pytest.raises(RLEngineError, match=r"^checkpoint .*ckpt-4 was removed while it was read \(a training run "
                       r"replaced it meanwhile\): run the command again$"):
        restore_choice(str(tmp_path), checked_choice(str(tmp_path), 4), pruned_meanwhile)
