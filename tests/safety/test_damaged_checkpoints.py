"""Damaged checkpoints (issue "Never lose a run, part two", item 4).

A checkpoint whose files changed after they were marked complete (a flipped
byte that keeps the size, a truncation, a lost file, a torn marker) is never
restored: resume falls back to the newest sound one, sets the damaged one
aside (moved, never deleted) with one warning line, and saves that iteration
again; ``eval``, ``play`` and ``export`` fall back the same way but leave the
directory as it is. Every checkpoint damaged, or a checkpoint of another
network shape, is one line saying which of the two it is. A damaged best
checkpoint (``checkpoints/best/``) chosen with ``--checkpoint best`` is one
line naming it (no fallback: that would be another policy); resume sets it
aside and training goes on.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import tensorflow as tf

from rlengine.errors import CheckpointMismatchError, DamagedCheckpointError, RLEngineError
from rlengine.run.checkpoints.files import mark_complete, marked_checkpoints
from rlengine.run.checkpoints.restoring import restore_newest
from rlengine.run.checkpoints.store import complete_checkpoints, newest_checkpoint
from rlengine.run.engine import Engine
from rlengine.testing import testing_plugin, tiny_config
from tests.safety.damage_kit import (
    DATA,
    checkpoint_file,
    checkpoint_warnings,
    flip_byte,
    set_aside_dirs,
    toy_engine,
    trained_toy_run,
)


@pytest.fixture
def trained(tmp_path) -> Path:
    return trained_toy_run(tmp_path)


# -- resume -------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", [DATA, "index"])
def test_a_flipped_byte_in_the_newest_checkpoint_is_set_aside_and_that_iteration_saved_again(trained, capsys, kind):
    damaged = flip_byte(checkpoint_file(trained, 4, kind))
    capsys.readouterr()

    result = toy_engine(trained).train()

    warnings = checkpoint_warnings(capsys.readouterr().err)
    aside = set_aside_dirs(trained, 4)
    assert len(warnings) == 1 and len(aside) == 1
    assert warnings[0] == (f"rlengine: warning: checkpoint {trained / 'checkpoints' / 'ckpt-4'} is damaged "
                           f"(ckpt-4.{kind}: checksum mismatch); set aside as {aside[0]}; resuming from ckpt-3")
    assert (aside[0] / f"ckpt-4.{kind}").read_bytes() == damaged  # kept as it was, never deleted
    assert sorted(p.name for p in aside[0].iterdir()) == ["ckpt-4.complete", f"ckpt-4.{DATA}", "ckpt-4.index"]
    assert result.env_steps == 32
    assert newest_checkpoint(str(trained)).endswith("ckpt-4")  # written again, and sound
    assert checkpoint_file(trained, 4, kind).read_bytes() != damaged
    assert tf.train.latest_checkpoint(str(trained / "checkpoints")).endswith("ckpt-4")


def _drop_checksums(root: Path, number: int) -> None:
    """Make ``ckpt-<number>``'s marker one of the previous version (sizes only)."""
    marker = root / "checkpoints" / f"ckpt-{number}.complete"
    fields = json.loads(marker.read_text())
    del fields["checksums"]
    marker.write_text(json.dumps(fields))


@pytest.mark.parametrize("kind, reported", [(DATA, "Checksum does not match"), ("index", "is corrupt")])
def test_without_checksums_what_tensorflow_cannot_read_is_damage_not_another_network(trained, capsys, kind,
                                                                                      reported):
    _drop_checksums(trained, 4)
    flip_byte(checkpoint_file(trained, 4, kind))  # the size stays: only TensorFlow's own reading can tell
    capsys.readouterr()

    toy_engine(trained).train()

    warnings = checkpoint_warnings(capsys.readouterr().err)
    assert len(warnings) == 1 and "ckpt-4 is damaged (unreadable: " in warnings[0] and reported in warnings[0]
    assert warnings[0].endswith("; resuming from ckpt-3") and "another algorithm" not in warnings[0]
    assert len(set_aside_dirs(trained, 4)) == 1 and newest_checkpoint(str(trained)).endswith("ckpt-4")


def test_a_truncated_newest_checkpoint_is_set_aside_rather_than_overwritten(trained, capsys):
    data = checkpoint_file(trained, 4).read_bytes()
    checkpoint_file(trained, 4).write_bytes(data[:-8])
    capsys.readouterr()

    toy_engine(trained).train()

    warnings = checkpoint_warnings(capsys.readouterr().err)
    assert len(warnings) == 1
    assert f"(ckpt-4.{DATA} has {len(data) - 8} bytes, its marker says {len(data)})" in warnings[0]
    assert (set_aside_dirs(trained, 4)[0] / f"ckpt-4.{DATA}").read_bytes() == data[:-8]
    assert newest_checkpoint(str(trained)).endswith("ckpt-4")


def test_a_torn_marker_counts_as_damage_and_is_set_aside(trained, capsys):
    marker = trained / "checkpoints" / "ckpt-4.complete"
    marker.write_text(marker.read_text()[:20])
    capsys.readouterr()

    toy_engine(trained).train()

    assert "(ckpt-4.complete is unreadable)" in checkpoint_warnings(capsys.readouterr().err)[0]
    assert newest_checkpoint(str(trained)).endswith("ckpt-4")


def test_a_resume_killed_while_setting_aside_finishes_the_job_on_the_next_resume(trained, capsys):
    # the data files moved, the marker not yet: what a kill inside set_aside() leaves
    half = trained / "checkpoints" / "ckpt-4.damaged-19700101-000000"
    half.mkdir()
    for kind in (DATA, "index"):
        os.replace(checkpoint_file(trained, 4, kind), half / f"ckpt-4.{kind}")
    capsys.readouterr()

    toy_engine(trained).train()

    assert "(ckpt-4.data-00000-of-00001 is missing)" in checkpoint_warnings(capsys.readouterr().err)[0]
    assert sorted(p.name for p in half.iterdir()) == [f"ckpt-4.{DATA}", "ckpt-4.index"]  # untouched
    assert newest_checkpoint(str(trained)).endswith("ckpt-4")


def test_every_checkpoint_damaged_is_one_line_that_says_damaged_and_changes_nothing(trained):
    for number in (3, 4):
        flip_byte(checkpoint_file(trained, number))
    listing = sorted(os.listdir(trained / "checkpoints"))

    with pytest.raises(DamagedCheckpointError) as caught:
        toy_engine(trained).train()

    message = str(caught.value)
    assert "\n" not in message and "another algorithm" not in message
    assert message.startswith(f"every checkpoint in {str(trained / 'checkpoints')!r} is damaged (ckpt-4: ckpt-4.")
    assert "ckpt-3: ckpt-3.data-00000-of-00001: checksum mismatch" in message and "--root-dir" in message
    assert sorted(os.listdir(trained / "checkpoints")) == listing  # nothing renamed: nothing to resume from


def test_a_checkpoint_of_another_algorithm_is_a_mismatch_not_damage(trained):
    with pytest.raises(CheckpointMismatchError) as caught:
        Engine(tiny_config(str(trained), algorithm="toy-q"), extra_plugins=[("testing", testing_plugin())],
               force=True).train()

    message = str(caught.value)
    assert "\n" not in message and "damaged" not in message
    assert message.startswith(f"checkpoint {trained / 'checkpoints' / 'ckpt-4'} was written by a run with another "
                              "algorithm or network shape (first difference: ")
    assert [n for n, _, _ in complete_checkpoints(str(trained / "checkpoints"))] == [4, 3]  # left as they were
    assert not set_aside_dirs(trained, 4)


def test_a_mismatch_names_the_first_object_of_this_run_the_checkpoint_lacks(tmp_path):
    tf.train.Checkpoint(v=tf.Variable([1.0])).write(str(tmp_path / "ckpt-1"))  # it reads whole: not damage
    mark_complete(str(tmp_path), 1)

    def restore(prefix):
        raise AssertionError("Found 2 Python objects that were not bound to checkpointed values, likely due to "
                             "changes in the Python program. Showing 2 of 2 unmatched objects: [<tf.Variable 'q:0' "
                             "shape=(2,) dtype=float32, numpy=array([0., 0.], dtype=float32)>, <tf.Variable ...>]")

    with pytest.raises(CheckpointMismatchError, match=r"\(first difference: this run's <tf.Variable 'q:0' "
                       r"shape=\(2,\) dtype=float32> \(and 1 more objects\) is not in the checkpoint\): use the "):
        restore_newest(str(tmp_path), restore, set_damaged_aside=True)


def test_a_marker_of_the_previous_version_without_checksums_still_loads(trained, capsys):
    for number in (3, 4):
        _drop_checksums(trained, number)
    assert newest_checkpoint(str(trained)).endswith("ckpt-4")
    checkpoint_file(trained, 4).write_bytes(checkpoint_file(trained, 4).read_bytes()[:-1])  # its sizes are still checked
    capsys.readouterr()

    toy_engine(trained).train()

    assert "(ckpt-4.data-00000-of-00001 has" in checkpoint_warnings(capsys.readouterr().err)[0]
    assert newest_checkpoint(str(trained)).endswith("ckpt-4")
    assert "checksums" in json.loads((trained / "checkpoints" / "ckpt-4.complete").read_text())  # saved anew


def test_an_intact_run_resumes_without_a_warning(trained, capsys):
    capsys.readouterr()
    assert toy_engine(trained).train().env_steps == 32
    assert not checkpoint_warnings(capsys.readouterr().err)
    assert not any(".damaged-" in name for name in os.listdir(trained / "checkpoints"))


# -- eval, play, export ----------------------------------------------------------------------
def test_evaluate_falls_back_to_the_newest_sound_checkpoint_and_leaves_the_damaged_one(trained, capsys):
    damaged = flip_byte(checkpoint_file(trained, 4))
    capsys.readouterr()

    engine = toy_engine(trained)
    metrics = engine.evaluate(num_episodes=2)

    warnings = checkpoint_warnings(capsys.readouterr().err)
    assert metrics["eval/episodes"] == 2
    assert warnings == [f"rlengine: warning: checkpoint {trained / 'checkpoints' / 'ckpt-4'} is damaged "
                        f"(ckpt-4.{DATA}: checksum mismatch); left in place (the next 'rlengine train' of this "
                        "run sets it aside); using ckpt-3"]
    assert checkpoint_file(trained, 4).read_bytes() == damaged and not set_aside_dirs(trained, 4)
    assert engine.newest_checkpoint().endswith("ckpt-3")


def test_evaluate_with_every_checkpoint_damaged_is_one_line(trained):
    for number in (3, 4):
        flip_byte(checkpoint_file(trained, number))
    with pytest.raises(DamagedCheckpointError, match=r"^every checkpoint in .* is damaged \(ckpt-4: .*\)"):
        toy_engine(trained).evaluate()


@pytest.mark.first_party
def test_export_and_play_fall_back_to_the_newest_sound_checkpoint(trained, tmp_path, capsys):
    from rlengine_tools.export import export_run
    from rlengine_tools.play import play_run

    flip_byte(checkpoint_file(trained, 4))
    kit = {"extra_plugins": [("testing", testing_plugin())]}
    capsys.readouterr()

    info = export_run(str(trained), str(tmp_path / "model"), **kit)
    episodes = play_run(str(trained), 1, **kit)

    assert info["checkpoint"] == "ckpt-3" and len(episodes) == 1
    warnings = checkpoint_warnings(capsys.readouterr().err)
    assert len(warnings) == 2 and all(w.endswith("; using ckpt-3") for w in warnings)


@pytest.mark.first_party
def test_the_cli_eval_of_a_run_whose_checkpoints_are_all_damaged_prints_one_line(tmp_path, capsys):
    from rlengine import cli

    root = tmp_path / "run"
    args = ["--root-dir", str(root)]
    assert cli.main(["train", "--algorithm", "ppo", "--env", "CartPole-v1", "--num-envs", "2", "--num-env-steps",
                     "64", *args, "--set", "train.unroll_length=16", "--set", "train.writers=[]", "--set",
                     "train.eval_interval=0", "--set", "train.checkpoint_interval=1"]) == 0
    flip_byte(checkpoint_file(root, 2))
    capsys.readouterr()
    assert cli.main(["eval", str(root), "--episodes", "1"]) == 0
    assert checkpoint_warnings(capsys.readouterr().err)[0].endswith("; using ckpt-1")

    flip_byte(checkpoint_file(root, 1))
    assert cli.main(["eval", str(root), "--episodes", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("rlengine: error: every checkpoint in ")
    assert "is damaged (ckpt-2: " in err and "another algorithm" not in err


def test_a_restore_that_loses_data_is_damage_and_a_checkpoint_pruned_meanwhile_is_skipped_quietly(tmp_path, capsys):
    directory = tmp_path / "checkpoints"
    directory.mkdir()
    for number in (1, 2, 3):
        (directory / f"ckpt-{number}.index").write_bytes(b"index")
        mark_complete(str(directory), number)

    def restore(prefix):
        if prefix.endswith("ckpt-3"):  # a training run pruned it (marker first) right after it was checked
            os.remove(prefix + ".complete")
            os.remove(prefix + ".index")
            raise tf.errors.NotFoundError(None, None, "ckpt-3.index; No such file or directory")
        if prefix.endswith("ckpt-2"):  # its checksums matched, yet TensorFlow reads lost data
            raise tf.errors.DataLossError(None, None, "Checksum does not match: stored 1 vs. calculated 2")

    assert restore_newest(str(directory), restore, set_damaged_aside=False).endswith("ckpt-1")
    warnings = checkpoint_warnings(capsys.readouterr().err)
    assert len(warnings) == 1 and warnings[0].endswith(
        "ckpt-2 is damaged (unreadable: Checksum does not match: stored 1 vs. calculated 2); left in place (the "
        "next 'rlengine train' of this run sets it aside); using ckpt-1")

    assert restore_newest(str(directory), restore, set_damaged_aside=True).endswith("ckpt-1")
    assert checkpoint_warnings(capsys.readouterr().err)[0].endswith("; resuming from ckpt-1")
    assert [n for n, _, _ in marked_checkpoints(str(directory))] == [1]
    assert sorted(p.name for p in set_aside_dirs(tmp_path, 2)[0].iterdir()) == ["ckpt-2.complete", "ckpt-2.index"]


def test_a_damaged_checkpoint_that_cannot_be_set_aside_stops_the_resume_in_one_line(tmp_path, monkeypatch):
    directory = tmp_path / "checkpoints"
    directory.mkdir()
    for number in (1, 2):
        (directory / f"ckpt-{number}.index").write_bytes(b"index")
        mark_complete(str(directory), number)
    (directory / "ckpt-2.index").write_bytes(b"INDEX")  # same size, other bytes

    def refuse(path, *args, **kwargs):
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(os, "mkdir", refuse)
    with pytest.raises(RLEngineError) as caught:  # left in place, it would keep ckpt-2 from being saved again
        restore_newest(str(directory), lambda prefix: None, set_damaged_aside=True)
    assert str(caught.value) == (
        f"checkpoint {directory / 'ckpt-2'} is damaged (ckpt-2.index: checksum mismatch) and cannot be set aside "
        f"(Permission denied): move its files out of {directory}, then resume")
    assert sorted(os.listdir(directory)) == ["ckpt-1.complete", "ckpt-1.index", "ckpt-2.complete", "ckpt-2.index"]


# -- the best checkpoint (checkpoints/best/) ---------------------------------------------------------
def _best_file(root: Path, kind: str = DATA) -> Path:
    """The ``trained`` run's best checkpoint: its evaluations at iterations 2 and 4 tie, so it is ``ckpt-2``."""
    return root / "checkpoints" / "best" / f"ckpt-2.{kind}"


def test_a_damaged_best_checkpoint_is_one_line_when_chosen_and_leaves_the_newest_ones_alone(trained, capsys):
    flip_byte(_best_file(trained))

    with pytest.raises(DamagedCheckpointError) as caught:
        toy_engine(trained).evaluate(num_episodes=1, checkpoint="best")

    assert str(caught.value) == (
        f"the best checkpoint {trained / 'checkpoints' / 'best' / 'ckpt-2'} is damaged (ckpt-2.{DATA}: checksum "
        "mismatch): use --checkpoint latest or one of 4, 3; the next 'rlengine train' of this run sets it aside, "
        "and its next evaluation writes a new best")
    capsys.readouterr()
    assert toy_engine(trained).evaluate(num_episodes=1)["eval/episodes"] == 1  # latest: no warning, nothing to skip
    assert not checkpoint_warnings(capsys.readouterr().err)


def test_resume_sets_a_damaged_best_checkpoint_aside_and_its_next_evaluation_writes_a_new_one(trained, capsys):
    damaged = flip_byte(_best_file(trained))
    capsys.readouterr()

    result = Engine(tiny_config(str(trained), checkpoint_interval=1, keep_checkpoints=2, num_env_steps=48),
                    extra_plugins=[("testing", testing_plugin())], force=True).train()

    best = trained / "checkpoints" / "best"
    aside = sorted(p for p in best.iterdir() if p.name.startswith("ckpt-2.damaged-"))
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("rlengine: warning:")]
    assert warnings == [f"rlengine: warning: best checkpoint {best / 'ckpt-2'} is damaged (ckpt-2.{DATA}: checksum "
                        f"mismatch); set aside as {aside[0]}; the run's next evaluation writes a new best"]
    assert (aside[0] / f"ckpt-2.{DATA}").read_bytes() == damaged  # kept, never deleted
    assert result.iterations == 6 and not set_aside_dirs(trained, 4)  # resumed from ckpt-4 as ever
    assert toy_engine(trained).newest_checkpoint("best") == str(best / "ckpt-6")  # the next evaluation's


def test_a_best_checkpoint_tensorflow_cannot_read_is_one_line_naming_it(trained):
    marker = trained / "checkpoints" / "best" / "ckpt-2.complete"
    fields = json.loads(marker.read_text())
    del fields["checksums"]  # a marker of the previous version: only TensorFlow's reading can tell
    marker.write_text(json.dumps(fields))
    flip_byte(_best_file(trained, "index"))

    with pytest.raises(DamagedCheckpointError, match=r"^checkpoint .*best/ckpt-2 is damaged \(unreadable: .*\): "
                       r"choose another one with --checkpoint, or restore its files from a backup$") as caught:
        toy_engine(trained).evaluate(num_episodes=1, checkpoint="best")
    assert "\n" not in str(caught.value) and "another algorithm" not in str(caught.value)
