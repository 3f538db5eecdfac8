"""Checkpoints TensorFlow cannot read (issue "Every mistake named", item 1): damage is damage, wherever found.

Files replaced by garbage together with a marker that lists their sizes and
even their checksums (a copy tool that rewrote both, a marker made again) pass
the marker's check; TensorFlow's own reader is what finds them unreadable. Such
a checkpoint is skipped with one warning line naming it, exactly as one whose
files no longer match their marker, by resume, ``eval``, ``play``, ``export``
and ``rlengine.load`` alike; its files stay as they are. "Another algorithm or
network shape" is said only of a checkpoint that reads whole and does not fit.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import rlengine
from rlengine.errors import CheckpointMismatchError
from rlengine.run.checkpoints.files import mark_complete
from rlengine.run.checkpoints.reading import unreadable
from rlengine.testing import testing_plugin
from tests.safety import damage_kit as kit

KIT = {"extra_plugins": [("testing", testing_plugin())]}


def _garbage(path: Path) -> None:
    path.write_bytes(os.urandom(path.stat().st_size))


def _zeros(path: Path) -> None:
    path.write_bytes(bytes(path.stat().st_size))


def _truncated(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-16])


DAMAGE = {  # (file, what is done to it): each then gets a fresh marker, so its sizes and checksums match
    "garbage index": ("index", _garbage),
    "garbage data": (kit.DATA, _garbage),
    "zeroed index": ("index", _zeros),
    "zeroed data": (kit.DATA, _zeros),
    "truncated data": (kit.DATA, _truncated),
}


@pytest.fixture(params=sorted(DAMAGE))
def unreadable_newest(request, tmp_path) -> tuple:
    """A finished toy run whose newest checkpoint ``ckpt-4`` is unreadable yet matches its (new) marker;
    ``(root, {file name: its damaged bytes})``."""
    root = kit.trained_toy_run(tmp_path)
    kind, damage = DAMAGE[request.param]
    damage(kit.checkpoint_file(root, 4, kind))
    mark_complete(str(root / "checkpoints"), 4, iteration=4, env_steps=32)
    files = {name: (root / "checkpoints" / name).read_bytes() for name in ("ckpt-4.index", f"ckpt-4.{kit.DATA}")}
    return root, files


def _one_warning(err: str, prefix: Path) -> str:
    warnings = kit.checkpoint_warnings(err)
    assert len(warnings) == 1, err
    assert warnings[0].startswith(f"rlengine: warning: checkpoint {prefix} is damaged (unreadable: ")
    assert "another algorithm" not in err and "does not fit" not in err
    return warnings[0]


def _unchanged(root: Path, files: dict, directory: Path | None = None) -> bool:
    directory = directory or root / "checkpoints"
    return all((directory / name).read_bytes() == data for name, data in files.items())


def test_resume_sets_it_aside_unchanged_and_goes_on_from_the_newest_sound_one(unreadable_newest, capsys):
    root, files = unreadable_newest
    capsys.readouterr()

    result = kit.toy_engine(root).train()

    warning = _one_warning(capsys.readouterr().err, root / "checkpoints" / "ckpt-4")
    aside = kit.set_aside_dirs(root, 4)
    assert warning.endswith(f"; set aside as {aside[0]}; resuming from ckpt-3")
    assert _unchanged(root, files, aside[0])  # moved as they were, never rewritten
    assert result.env_steps == 32 and unreadable(str(root / "checkpoints" / "ckpt-4")) == ""  # saved again


def test_evaluate_and_load_skip_it_and_leave_it_as_it_is(unreadable_newest, capsys):
    root, files = unreadable_newest
    capsys.readouterr()

    engine = kit.toy_engine(root)
    assert engine.evaluate(num_episodes=1)["eval/episodes"] == 1
    evaluated = _one_warning(capsys.readouterr().err, root / "checkpoints" / "ckpt-4")
    policy = rlengine.load(str(root), backend="tensorflow", **KIT)
    loaded = _one_warning(capsys.readouterr().err, root / "checkpoints" / "ckpt-4")

    assert evaluated == loaded and loaded.endswith("; left in place (the next 'rlengine train' of this run sets "
                                                   "it aside); using ckpt-3")
    assert policy.checkpoint == str(root / "checkpoints" / "ckpt-3")
    assert _unchanged(root, files) and not kit.set_aside_dirs(root, 4)


def test_load_says_so_when_the_newest_checkpoint_no_longer_matches_its_marker(tmp_path, capsys):
    root = kit.trained_toy_run(tmp_path)
    kit.flip_byte(kit.checkpoint_file(root, 4))
    capsys.readouterr()

    policy = rlengine.load(str(root), backend="tensorflow", **KIT)

    assert policy.checkpoint.endswith("ckpt-3")
    assert kit.checkpoint_warnings(capsys.readouterr().err) == [
        f"rlengine: warning: checkpoint {root / 'checkpoints' / 'ckpt-4'} is damaged (ckpt-4.{kit.DATA}: checksum "
        "mismatch); left in place (the next 'rlengine train' of this run sets it aside); using ckpt-3"]


def test_a_cached_policy_of_a_checkpoint_damaged_since_is_not_used(tmp_path, capsys):
    root = kit.trained_toy_run(tmp_path)
    assert rlengine.load(str(root), backend="tflite", **KIT).checkpoint.endswith("ckpt-4")
    assert (root / "checkpoints" / "ckpt-4.policy.npz").is_file()  # cached: the next load takes it
    kit.flip_byte(kit.checkpoint_file(root, 4))
    capsys.readouterr()

    policy = rlengine.load(str(root), backend="tflite", **KIT)

    assert policy.checkpoint.endswith("ckpt-3") and len(kit.checkpoint_warnings(capsys.readouterr().err)) == 1


@pytest.mark.first_party
def test_export_and_play_skip_it(unreadable_newest, tmp_path, capsys):
    from rlengine_tools.export import export_run
    from rlengine_tools.play import play_run

    root, files = unreadable_newest
    capsys.readouterr()

    info = export_run(str(root), str(tmp_path / "model"), **KIT)
    episodes = play_run(str(root), 1, **KIT)

    assert info["checkpoint"] == "ckpt-3" and len(episodes) == 1
    warnings = kit.checkpoint_warnings(capsys.readouterr().err)
    assert len(warnings) == 2 and all("is damaged (unreadable: " in w and w.endswith("; using ckpt-3")
                                      for w in warnings)
    assert _unchanged(root, files)


@pytest.mark.first_party
def test_a_run_resumed_with_another_network_shape_is_still_a_mismatch(tmp_path):
    def ppo(hidden_sizes: list, force: bool = False) -> rlengine.Engine:
        config = {"train": dict(algorithm="ppo", env="CartPole-v1", num_envs=2, unroll_length=16,
                                num_env_steps=64, writers=[], eval_interval=0, checkpoint_interval=1,
                                root_dir=str(tmp_path / "run")),
                  "ppo": {"hidden_sizes": hidden_sizes, "num_epochs": 1}}
        return rlengine.Engine(config, force=force)

    ppo([64, 64]).train()
    listing = sorted(os.listdir(tmp_path / "run" / "checkpoints"))

    with pytest.raises(CheckpointMismatchError) as caught:
        ppo([32], force=True).train()

    message = str(caught.value)
    assert "\n" not in message and "damaged" not in message and "unreadable" not in message
    assert message.startswith(f"checkpoint {tmp_path / 'run' / 'checkpoints' / 'ckpt-'}")
    assert "was written by a run with another algorithm or network shape (first difference: " in message
    assert sorted(os.listdir(tmp_path / "run" / "checkpoints")) == listing  # nothing set aside
