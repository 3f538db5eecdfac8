"""Never lose a run, part two: what a checkpoint holds.

* only the filled part of the replay buffer (a 2e8-row capacity once wrote 7.2 GB for 768 rows),
  restored so exactly that sampling goes on as if never interrupted;
* no environment state above ``train.max_env_state_bytes`` (one warning; those episodes restart);
* environment state restored only when this user signed it: a downloaded run's pickle never runs.
"""

import io
import json
import os
import pickle
import stat

import attrs
import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.framework import config as tf_config

from rlengine import hookimpl
from rlengine.api import seeding
from rlengine.collect import env_state, state_signing
from rlengine.learn.replay.buffer import ReplayBuffer
from rlengine.pipelines.sync.pipeline import SyncPipeline, _load_arrays
from rlengine.run.checkpoints.store import newest_checkpoint
from rlengine.run.engine import Engine
from rlengine.testing import testing_plugin, tiny_config
from rlengine.testing.kit import CountingConfig, CountingEnv, ToyQAlgorithm

WARNING = "rlengine: warning: "


@pytest.fixture(autouse=True)
def state_key(tmp_path, monkeypatch):
    """This test's user key, so no test touches the real ~/.config/rlengine."""
    path = tmp_path / "keys" / "mine"
    monkeypatch.setenv(state_signing.KEY_FILE_VARIABLE, str(path))
    StatefulEnv.restores = []
    return path


# -- a testing environment whose state is a pickle, like the gym plugin's -----------------------------
class MkdirWhenUnpickled:
    """A crafted pickle: loading it calls ``os.makedirs(path)`` (it could as well run anything)."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return os.makedirs, (self.path, 0o777, True)


@attrs.define
class StatefulConfig(CountingConfig):
    state_padding: int = 0  # bytes added to the saved state: a huge state
    payload: str = ""  # non-empty: the saved state is a pickle that creates this directory when loaded


class StatefulEnv(CountingEnv):
    """The counting env with ``state()``: its step counters, pickled."""

    config_class = StatefulConfig
    restores: list = []  # every restore_state() call, as the t it restored (None: the payload)

    def state(self):
        if self.config.payload:
            return pickle.dumps(MkdirWhenUnpickled(self.config.payload))
        return pickle.dumps({"t": self.t.copy(), "padding": b"\0" * self.config.state_padding})

    def restore_state(self, state):
        saved = pickle.loads(state)  # like the gym plugin: unpickling runs whatever the bytes name
        if isinstance(saved, dict):
            self.t = saved["t"]
        StatefulEnv.restores.append(None if saved is None else saved["t"].tolist())


class BigReplayToyQ(ToyQAlgorithm):
    replay_capacity = 1_000_000  # 28 MB preallocated; a run here writes about 40 rows


class PrioritizedToyQ(ToyQAlgorithm):
    prioritized_replay = True


class Plugin:
    @hookimpl
    def rlengine_register_environments(self, register):
        register("stateful", StatefulEnv)

    @hookimpl
    def rlengine_register_algorithms(self, register):
        register("big-toy-q", BigReplayToyQ)
        register("prioritized-toy-q", PrioritizedToyQ)


class Interrupted(Exception):
    """Stands in for a crash right after a checkpoint."""


class StopAfterCheckpoint:
    def __init__(self, iteration):
        self.iteration = iteration

    @hookimpl
    def rlengine_checkpoint_saved(self, run, iteration, path):
        if iteration == self.iteration:
            raise Interrupted(path)


def _engine(config, *plugins):
    extra = [("testing", testing_plugin()), ("contents", Plugin()), *[(f"p{i}", p) for i, p in enumerate(plugins)]]
    return Engine(config, extra_plugins=extra)


def _interrupted(config, at=2):
    with pytest.raises(Exception) as err:  # a hook's exception may arrive wrapped as a PluginError
        _engine(config, StopAfterCheckpoint(at)).train()
    assert "Interrupted" in repr(err.value) or isinstance(err.value.__cause__, Interrupted)


def _stateful(root, **env):
    config = tiny_config(str(root), env="stateful", checkpoint_interval=1, eval_interval=0)
    config["stateful"] = env
    return config


def _warnings(err, about):
    return [line for line in err.splitlines() if line.startswith(WARNING) and about in line]


def _blob(prefix, name):
    return tf.train.load_variable(prefix, f"{name}/.ATTRIBUTES/VARIABLE_VALUE")


def _checkpoint_bytes(prefix):
    directory, name = os.path.split(prefix)
    return sum(os.path.getsize(os.path.join(directory, n)) for n in os.listdir(directory)
               if n.startswith(name + ".") and not n.endswith(".complete"))


# -- item 6: only the filled part of the replay buffer ----------------------------------------------
def test_a_checkpoint_holds_only_the_rows_a_huge_replay_buffer_has_written(tmp_path):
    config = tiny_config(str(tmp_path), algorithm="big-toy-q", checkpoint_interval=1, eval_interval=0)
    _interrupted(config)
    prefix = newest_checkpoint(str(tmp_path))
    assert _checkpoint_bytes(prefix) < 100_000  # the preallocated buffer alone is 28 MB
    # 2 iterations x 4 steps + the first row, per copy: 9 of the 500,000 rows of each ring
    rows = tf.train.load_variable(prefix, "replay/_filled/.ATTRIBUTES/rows_0")
    assert rows.shape[:2] == (2, 9)

    seen = {}

    class Look:
        @hookimpl
        def rlengine_iteration_end(self, run, iteration, metrics):
            seen.setdefault("heads", run.internals.replay._head.numpy().tolist())

    _engine(config, Look()).train()  # resumes: the 9 rows per copy are back, 5 more follow
    assert seen["heads"] == [9 + 5, 9 + 5]


SPEC = {"env_id": tf.TensorSpec([], tf.int32), "x": tf.TensorSpec([3], tf.float32),
        "step_type": tf.TensorSpec([], tf.int32)}


def _add_rows(buffer, rows_per_env):
    """Add rows unevenly: copy e gets ``rows_per_env[e]`` rows, each with its own values."""
    for e, rows in enumerate(rows_per_env):
        for t in range(rows):
            buffer.add({"env_id": tf.constant([e], tf.int32), "x": tf.fill([1, 3], float(100 * e + t)),
                        "step_type": tf.ones([1], tf.int32)})


def _buffer(prioritized, capacity=3 * 6):
    return ReplayBuffer(SPEC, num_envs=3, capacity=capacity, sequence_length=2, prioritized=prioritized)


@pytest.mark.parametrize("prioritized", [False, True])
@pytest.mark.parametrize("rows", [[9, 4, 1], [5, 4, 1]], ids=["a-ring-full", "all-rings-partial"])
def test_restored_rings_sample_exactly_as_the_saved_ones(tmp_path, prioritized, rows):
    saved = _buffer(prioritized)
    _add_rows(saved, rows)  # ring 0 wrapped (or not), ring 1 partly filled, ring 2 holds no whole sequence
    if prioritized:
        saved.update_priorities(tf.constant([1, 2, 7]), tf.constant([3.0, 0.5, 9.0]))
    path = tf.train.Checkpoint(buffer=saved).save(str(tmp_path / "ckpt"))
    restored = _buffer(prioritized)
    _add_rows(restored, [2, 2, 2])  # not a fresh buffer: what it held must not leak into the restored one
    tf.train.Checkpoint(buffer=restored).restore(path).assert_consumed()

    assert restored._head.numpy().tolist() == rows
    for a, b in zip(saved._storage, restored._storage):  # every written row is back, bit for bit
        for ring, count in enumerate(min(r, 6) for r in rows):
            np.testing.assert_array_equal(a.numpy()[ring, :count], b.numpy()[ring, :count])
    if prioritized:  # the whole tree, leaves and sums, bit for bit: the same draws follow
        np.testing.assert_array_equal(saved._tree.leaves.numpy(), restored._tree.leaves.numpy())
        np.testing.assert_array_equal(saved._tree.nodes.numpy(), restored._tree.nodes.numpy())
    draws = []
    for buffer in (saved, restored):
        seeding.reset(7)
        sample = buffer.sample(64)
        draws.append([sample.indices.numpy(), sample.weights.numpy(), *[x.numpy() for x in
                                                                        tf.nest.flatten(sample.experience)]])
    for a, b in zip(*draws):
        np.testing.assert_array_equal(a, b)


@pytest.fixture
def op_determinism():
    yield
    tf_config.disable_op_determinism()  # process-wide: keep the other tests as they were


def _final_values(root):
    path = newest_checkpoint(str(root))
    return {name: tf.train.load_variable(path, name) for name, _ in tf.train.list_variables(path)
            if name.split("/")[0] in ("algorithm", "replay", "random")}


@pytest.mark.thorough  # the root suite leaves it out for time; this package's tox env runs it
def test_a_resumed_prioritized_run_ends_as_the_uninterrupted_one(tmp_path, op_determinism):
    def config(name):
        return tiny_config(str(tmp_path / name), algorithm="prioritized-toy-q", env="stateful", num_env_steps=48,
                           checkpoint_interval=1, eval_interval=0, deterministic=True, seed=3)

    _engine(config("straight")).train()
    _interrupted(config("resumed"), at=3)
    _engine(config("resumed")).train()
    straight, resumed = _final_values(tmp_path / "straight"), _final_values(tmp_path / "resumed")
    assert straight.keys() == resumed.keys() and "replay/_filled/.ATTRIBUTES/priorities" in straight
    for name in straight:  # weights, rows, priorities and the generator: bit for bit
        np.testing.assert_array_equal(straight[name], resumed[name], err_msg=name)


def test_rows_of_rings_of_another_size_are_refused_in_one_line(tmp_path):
    saved = _buffer(False, capacity=3 * 6)
    _add_rows(saved, [9, 4, 1])
    path = tf.train.Checkpoint(buffer=saved).save(str(tmp_path / "ckpt"))
    other = _buffer(False, capacity=3 * 12)  # another replay capacity: times modulo 12, not 6
    with pytest.raises(ValueError, match=r"^replay buffer: the checkpoint's rings hold 6 rows each, this "
                                         r"buffer's 12 \(another replay capacity or num_envs\)$"):
        tf.train.Checkpoint(buffer=other).restore(path)


# -- item 6: environment state above train.max_env_state_bytes ------------------------------------
def test_an_environment_state_above_the_limit_is_left_out_with_one_warning_per_env(tmp_path, capsys):
    config = _stateful(tmp_path, state_padding=20_000)
    config["train"].update(max_env_state_bytes=4096, eval_interval=1000)  # evaluation copies, never used here
    _interrupted(config, at=3)
    err = capsys.readouterr().err
    lines = _warnings(err, "above train.max_env_state_bytes = 4.0 KiB")
    assert len(lines) == 2, err  # once for the training env and once for the evaluation env, not per checkpoint
    assert "environment 'stateful'" in lines[0] and "episodes restart on resume" in lines[0]
    prefix = newest_checkpoint(str(tmp_path))
    assert _blob(prefix, "pipeline") == b"" and _blob(prefix, "eval_environment") == b""
    assert _checkpoint_bytes(prefix) < 20_000

    _engine(config).train()  # resumes with new episodes, and says nothing about trust
    assert StatefulEnv.restores == []
    assert not _warnings(capsys.readouterr().err, "not restoring")


def test_an_environment_state_under_the_limit_is_signed_and_its_episodes_continue(tmp_path, capsys):
    config = _stateful(tmp_path, state_padding=1000)
    config["train"].update(eval_interval=1000)  # evaluation copies, to checkpoint; the only evaluation is the last
    _interrupted(config)
    prefix = newest_checkpoint(str(tmp_path))
    assert _blob(prefix, "pipeline").startswith(state_signing.MAGIC)
    assert _blob(prefix, "eval_environment").startswith(state_signing.MAGIC)
    _engine(config).train()
    assert len(StatefulEnv.restores) == 2  # the evaluation env, then the training env: both continue
    assert not _warnings(capsys.readouterr().err, "environment state")


def test_a_saved_last_row_of_another_layout_restarts_the_episodes_with_one_warning(tmp_path, capsys, monkeypatch):
    """E.g. a run saved before its algorithm changed what ``rollout`` returns: the carry would not fit."""
    config = _stateful(tmp_path)
    save_state = SyncPipeline.save_state

    def with_one_leaf_more(self):
        arrays = _load_arrays(env_state.trusted(save_state(self)))
        buffer = io.BytesIO()
        np.savez(buffer, *arrays, np.zeros([2], np.float32))
        return env_state.signed(buffer.getvalue())

    with monkeypatch.context() as saved_otherwise:
        saved_otherwise.setattr(SyncPipeline, "save_state", with_one_leaf_more)
        _interrupted(config)
    capsys.readouterr()
    _engine(config).train()  # resumed: new episodes instead of an error
    assert StatefulEnv.restores == []
    lines = _warnings(capsys.readouterr().err, "environment state")
    assert lines == [f"{WARNING}not restoring environment state of {tmp_path / 'checkpoints' / 'ckpt-2'}: its last "
                     "collected row has another layout than this run's experience (the algorithm's rollout info, the "
                     "policy state or the transformers changed since); episodes restart"]


# -- item 7: untrusted state is never unpickled -------------------------------------------------------
def test_a_crafted_pickle_in_a_foreign_signed_run_never_runs(tmp_path, capsys, monkeypatch):
    payload = tmp_path / "payload-ran"
    config = _stateful(tmp_path / "run", payload=str(payload))
    monkeypatch.setenv(state_signing.KEY_FILE_VARIABLE, str(tmp_path / "keys" / "theirs"))
    _interrupted(config)  # the run dir as downloaded: written and signed by someone else
    monkeypatch.setenv(state_signing.KEY_FILE_VARIABLE, str(tmp_path / "keys" / "mine"))
    capsys.readouterr()

    _engine(config).train()  # resumed by this user: continues with fresh episodes
    assert not payload.exists() and StatefulEnv.restores == []
    lines = _warnings(capsys.readouterr().err, "environment state")
    assert lines == [f"{WARNING}not restoring environment state of {tmp_path / 'run' / 'checkpoints' / 'ckpt-2'}: "
                     "it was not written by this user (signed with another key); episodes restart"]


def test_the_signature_is_what_stops_the_payload(tmp_path):
    """The control: resumed by the user who wrote it, the same payload does run (restore_state unpickles)."""
    payload = tmp_path / "payload-ran"
    config = _stateful(tmp_path / "run", payload=str(payload))
    _interrupted(config)
    _engine(config).train()
    assert payload.is_dir()


def test_an_unsigned_environment_state_is_not_restored(tmp_path, capsys, monkeypatch):
    config = _stateful(tmp_path)
    with monkeypatch.context() as written_unsigned:  # e.g. by an rlengine from before signing, or edited
        written_unsigned.setattr(state_signing, "sign", lambda payload, key=None: payload)
        _interrupted(config)
    capsys.readouterr()
    _engine(config).train()
    assert StatefulEnv.restores == []
    lines = _warnings(capsys.readouterr().err, "environment state")
    assert len(lines) == 1 and lines[0].endswith("it was not written by this user (unsigned); episodes restart")


def test_a_signed_state_changed_afterwards_is_refused():
    key = b"k" * 64
    blob = state_signing.sign(b"payload", key)
    assert state_signing.verified(blob, key) == (b"payload", "")
    tampered = blob[:-1] + b"X"
    assert state_signing.verified(tampered, key) == (None, state_signing.FOREIGN)
    assert state_signing.verified(b"payload", key) == (None, state_signing.UNSIGNED)
    assert state_signing.verified(blob, b"o" * 64) == (None, state_signing.FOREIGN)


def test_the_state_key_is_made_once_and_only_its_owner_may_read_it(state_key):
    assert not state_key.exists()
    key = state_signing.load_key()
    assert state_signing.load_key() == key and len(key) == 64
    assert stat.S_IMODE(os.stat(state_key).st_mode) == 0o600
    assert [p.name for p in state_key.parent.iterdir()] == ["mine"]  # no temp file left behind


def test_the_state_key_lives_in_the_user_config_dir_by_default(tmp_path, monkeypatch):
    monkeypatch.delenv(state_signing.KEY_FILE_VARIABLE)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    assert state_signing.key_path() == str(tmp_path / "config" / "rlengine" / "state-key")


def test_an_unusable_state_key_leaves_env_state_out_with_one_warning(tmp_path, capsys, monkeypatch):
    unusable = tmp_path / "a-directory"
    unusable.mkdir()
    monkeypatch.setenv(state_signing.KEY_FILE_VARIABLE, str(unusable))
    config = _stateful(tmp_path / "run")
    _engine(config).train()  # the run completes; its checkpoints simply hold no env state
    lines = _warnings(capsys.readouterr().err, "state key")
    assert len(lines) == 1 and str(unusable) in lines[0] and "RLENGINE_STATE_KEY_FILE" in lines[0]
    assert _blob(newest_checkpoint(str(tmp_path / "run")), "pipeline") == b""


@pytest.mark.first_party
def test_cli_resumes_a_gym_run_signed_by_another_user_with_one_warning_line(tmp_path, capsys, monkeypatch):
    from rlengine import cli

    root = tmp_path / "run"
    args = ["train", "--algorithm", "ppo", "--env", "CartPole-v1", "--num-envs", "2", "--root-dir", str(root),
            "--set", "train.unroll_length=16", "--set", 'train.writers=["jsonl"]', "--set", "train.eval_interval=0",
            "--set", "train.checkpoint_interval=1"]
    monkeypatch.setenv(state_signing.KEY_FILE_VARIABLE, str(tmp_path / "keys" / "theirs"))
    assert cli.main([*args, "--num-env-steps", "64"]) == 0  # gym's sync state: a pickle, signed by them
    monkeypatch.setenv(state_signing.KEY_FILE_VARIABLE, str(tmp_path / "keys" / "mine"))
    capsys.readouterr()
    assert cli.main([*args, "--num-env-steps", "96", "--force"]) == 0
    err = capsys.readouterr().err
    assert [line for line in err.splitlines() if line.startswith(WARNING)] == [
        f"{WARNING}not restoring environment state of {root / 'checkpoints' / 'ckpt-2'}: it was not written by "
        "this user (signed with another key); episodes restart"]
    with open(root / "metrics.jsonl") as f:
        assert [row["env_steps"] for row in map(json.loads, f)] == [32, 64, 96]  # continued, nothing lost
