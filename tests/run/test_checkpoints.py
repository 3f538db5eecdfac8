"""Crash-safe checkpoints: what they hold, which one loads after a crash, and what a resume refuses."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

import rlengine
from rlengine import hookimpl
from rlengine.errors import RLEngineError
from rlengine.learn.replay.buffer import ReplayBuffer
from rlengine.run.checkpoints.store import complete_checkpoints, differing_keys, newest_checkpoint
from rlengine.run.engine import Engine
from rlengine.testing import testing_plugin, tiny_config


def _engine(tmp_path, extra=(), **train):
    return Engine(tiny_config(str(tmp_path), **train), extra_plugins=[("testing", testing_plugin()), *extra])


def _checkpoint_names(tmp_path):
    return sorted(os.listdir(tmp_path / "checkpoints"))


def test_every_checkpoint_is_marked_complete_and_only_keep_checkpoints_stay(tmp_path):
    _engine(tmp_path, checkpoint_interval=1, keep_checkpoints=2).train()
    assert [n for n, _, _ in complete_checkpoints(str(tmp_path / "checkpoints"))] == [4, 3]
    assert _checkpoint_names(tmp_path) == [  # best/: the best evaluation's checkpoint, which pruning leaves
        "best", "checkpoint", "ckpt-3.complete", "ckpt-3.data-00000-of-00001", "ckpt-3.index",
        "ckpt-4.complete", "ckpt-4.data-00000-of-00001", "ckpt-4.index"]
    assert tf.train.latest_checkpoint(str(tmp_path / "checkpoints")).endswith("ckpt-4")  # TF's index agrees
    names = {name.split("/")[0] for name, _ in tf.train.list_variables(newest_checkpoint(str(tmp_path)))}
    assert {"algorithm", "iteration", "env_steps", "random", "global_random", "pipeline", "episode_stats",
            "config"} <= names  # no transformer here: the chain has nothing to save


def test_a_checkpoint_killed_before_its_marker_is_ignored(tmp_path):
    _engine(tmp_path, checkpoint_interval=1).train()
    directory = tmp_path / "checkpoints"
    os.remove(directory / "ckpt-4.complete")  # killed after writing ckpt-4's files, before marking them
    assert newest_checkpoint(str(tmp_path)).endswith("ckpt-3")


def test_a_checkpoint_whose_files_changed_after_marking_is_ignored(tmp_path):
    _engine(tmp_path, checkpoint_interval=1).train()
    data = tmp_path / "checkpoints" / "ckpt-4.data-00000-of-00001"
    data.write_bytes(data.read_bytes()[:-8])  # torn
    assert newest_checkpoint(str(tmp_path)).endswith("ckpt-3")
    (tmp_path / "checkpoints" / "ckpt-3.complete").write_text("{not json")
    assert newest_checkpoint(str(tmp_path)).endswith("ckpt-2")


def test_pruning_never_removes_the_only_complete_checkpoint(tmp_path):
    _engine(tmp_path, checkpoint_interval=1, keep_checkpoints=1).train()
    assert [n for n, _, _ in complete_checkpoints(str(tmp_path / "checkpoints"))] == [4]


def test_leftovers_of_a_killed_save_are_removed_by_the_next_one(tmp_path):
    directory = tmp_path / "checkpoints"
    directory.mkdir()
    (tmp_path / ".rlengine-run").write_text("{}")  # the killed run had started: its run dir is marked
    (directory / "ckpt-1.index").write_bytes(b"torn")  # a save killed before its marker
    _engine(tmp_path, checkpoint_interval=2).train()
    assert "ckpt-1.index" not in _checkpoint_names(tmp_path)


def test_the_counters_and_the_effective_config_are_in_the_checkpoint(tmp_path):
    engine = _engine(tmp_path, checkpoint_interval=1)
    engine.train()
    path = newest_checkpoint(str(tmp_path))
    assert tf.train.load_variable(path, "iteration/.ATTRIBUTES/VARIABLE_VALUE") == 4
    assert tf.train.load_variable(path, "env_steps/.ATTRIBUTES/VARIABLE_VALUE") == 32
    config = json.loads(tf.train.load_variable(path, "config/.ATTRIBUTES/VARIABLE_VALUE"))
    assert config == json.loads(json.dumps(engine.config.to_dict()))


def test_the_replay_buffer_can_be_left_out(tmp_path):
    _engine(tmp_path / "with", algorithm="toy-q").train()
    _engine(tmp_path / "without", algorithm="toy-q", checkpoint_replay=False).train()

    def has_replay(root):
        return any(n.startswith("replay/") for n, _ in tf.train.list_variables(newest_checkpoint(str(root))))

    assert has_replay(tmp_path / "with") and not has_replay(tmp_path / "without")


def test_a_root_dir_with_another_config_is_refused_naming_the_keys(tmp_path):
    _engine(tmp_path).train()
    with pytest.raises(RLEngineError) as err:
        _engine(tmp_path, num_envs=4, seed=3).train()
    message = str(err.value)
    assert "train.num_envs, train.seed" in message and "--force" in message and "\n" not in message
    forced = Engine(tiny_config(str(tmp_path), seed=3), extra_plugins=[("testing", testing_plugin())], force=True)
    assert forced.train().env_steps == 32  # resumed at the end of the budget: nothing left to do


def test_differing_keys_ignores_only_the_root_dir():
    old = {"train": {"seed": 1, "root_dir": "a"}, "ppo": {"lr": 1.0}}
    new = {"train": {"seed": 1, "root_dir": "/abs/a", "eager": True}, "ppo": {"lr": 2.0}}
    assert differing_keys(old, new) == ["ppo.lr", "train.eager"]


def test_marking_the_newest_rows_last_cuts_each_copy_where_it_stopped():
    spec = rlengine.Experience(*[tf.TensorSpec([], dt) for dt in
                                 (tf.int32, tf.float32, tf.float32, tf.float32, tf.int32, tf.int32)], (), (), ())
    buffer = ReplayBuffer(spec, num_envs=3, capacity=12, sequence_length=2)
    rows = rlengine.Experience(tf.constant([1, 1]), tf.zeros([2]), tf.ones([2]), tf.zeros([2]),
                               tf.zeros([2], tf.int32), tf.constant([0, 2]), (), (), ())
    buffer.add(rows)
    buffer.add(rows)
    buffer.mark_newest_rows_last()
    step_types = buffer._storage[0].numpy()  # step_type is the first leaf
    assert step_types[0].tolist()[:2] == [1, 2] and step_types[2].tolist()[:2] == [1, 2]
    assert step_types[1].tolist() == [0, 0, 0, 0]  # a copy that holds nothing is left alone


def test_seeding_repeats_after_reset_and_restore_from_a_checkpoint(tmp_path):
    rlengine.random.reset(7)
    first = [rlengine.random.seed().numpy().tolist() for _ in range(3)]
    rlengine.random.reset(7)
    assert [rlengine.random.seed().numpy().tolist() for _ in range(3)] == first
    checkpoint = tf.train.Checkpoint(random=rlengine.random.generator())
    path = checkpoint.write(str(tmp_path / "rng"))
    after = rlengine.random.seed().numpy().tolist()
    checkpoint.restore(path)
    assert rlengine.random.seed().numpy().tolist() == after
    assert rlengine.random.seed().dtype == tf.int32 and after not in first


class _Capture:
    """Keeps the optimizer variables of the run's algorithm when training ends."""

    def __init__(self):
        self.values = None

    @hookimpl
    def rlengine_train_end(self, run, error):
        self.values = _optimizer_values(run.algorithm)


def _optimizer_values(algorithm):
    optimizers = [o for o, _ in getattr(algorithm, "optimizers", [])] or [algorithm.optimizer]
    return [v.numpy() for o in optimizers for v in o.variables]


SHORT_RUNS = {
    "ppo": ({"algorithm": "ppo", "env": "CartPole-v1", "num_envs": 2, "unroll_length": 8, "num_env_steps": 32},
            {"ppo": {"num_epochs": 1, "mini_batch_size": 8}}),
    "sac": ({"algorithm": "sac", "env": "Pendulum-v1", "num_envs": 1, "unroll_length": 4, "num_env_steps": 32},
            {"sac": {"hidden_sizes": [16], "mini_batch_size": 8, "initial_collect_steps": 8,
                     "num_updates_per_iteration": 2, "replay_capacity": 1000}}),
}


@pytest.mark.first_party
@pytest.mark.parametrize("algorithm", sorted(SHORT_RUNS))
def test_adam_slots_are_checkpointed_and_restored(tmp_path, algorithm):
    train, sections = SHORT_RUNS[algorithm]
    config = {"train": {**train, "writers": [], "eval_interval": 0, "root_dir": str(tmp_path)}, **sections}
    capture = _Capture()
    Engine(config, extra_plugins=[("capture", capture)]).train()
    moments = [v for v in capture.values if v.ndim > 0]
    assert moments and all(np.any(v != 0) for v in moments), "Adam's moments should be non-zero after training"
    with Engine(config).restored() as components:
        restored = _optimizer_values(components.algorithm)
    assert len(restored) == len(capture.values)
    for saved, loaded in zip(capture.values, restored):
        np.testing.assert_array_equal(saved, loaded)


@pytest.mark.first_party
def test_jsonl_resume_drops_rows_past_the_checkpoint_and_torn_rows(tmp_path):
    from rlengine_writers.jsonl_writer import JsonlConfig, JsonlWriter

    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps({"iteration": i, "env_steps": 8 * i}) + "\n" for i in range(1, 6))
                    + '{"iteration": 6, "env_st')
    writer = JsonlWriter(str(tmp_path), JsonlConfig())
    writer.resume_from(24)
    writer.write({"iteration": 4, "env_steps": 32, "wall_time": 0.0})
    writer.close()
    assert [json.loads(line)["env_steps"] for line in path.read_text().splitlines()] == [8, 16, 24, 32]


@pytest.mark.first_party
def test_gym_sync_state_restores_episodes_in_progress_and_their_random_streams():
    from rlengine_gym import GymEnvironment

    source, target = GymEnvironment("Pendulum-v1", 2, seed=1), GymEnvironment("Pendulum-v1", 2, seed=9)
    source.reset()
    target.reset()
    action = np.full([2, 1], 0.5, np.float32)
    for _ in range(3):
        source.step(action)
    target.restore_state(source.state())
    for _ in range(250):  # past the 200-step time limit: the resets draw from the restored generators too
        a, b = source.step(action), target.step(action)
        np.testing.assert_array_equal(a.observation, b.observation)
        np.testing.assert_array_equal(a.step_type, b.step_type)
    source.close()
    target.close()
    with GymEnvironment("CartPole-v1", 2, seed=0, config={"vectorization": "async"}) as env:
        with pytest.raises(NotImplementedError, match="sync"):
            env.state()


def test_a_run_dir_written_before_a_key_existed_resumes_when_the_key_keeps_its_default():
    from rlengine.run.checkpoints.store import differing_keys

    old = {"train": {"driver": "sync", "seed": 1}}  # an older version: no `pipeline`, no `new_key` yet
    new = {"train": {"pipeline": "sync", "seed": 1, "new_key": 5}}

    assert differing_keys(old, new, {"train.new_key": 5, "train.pipeline": "sync"}) == []
    assert differing_keys(old, {"train": {**new["train"], "new_key": 6}}, {"train.new_key": 5}) == ["train.new_key"]
    assert differing_keys(old, {"train": {**new["train"], "pipeline": "async"}}, {"train.new_key": 5}) == ["train.pipeline"]
