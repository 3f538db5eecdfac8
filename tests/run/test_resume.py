"""Resume: training again into the same root dir continues from the newest complete checkpoint."""

import json

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.framework import config as tf_config

from rlengine import StepType, hookimpl
from rlengine.run.checkpoints.store import newest_checkpoint
from rlengine.run.engine import Engine
from rlengine.testing import MemoryWriter, testing_plugin, tiny_config


class Interrupted(Exception):
    """Stands in for a crash right after a checkpoint."""


class StopAfterCheckpoint:
    def __init__(self, iteration):
        self.iteration = iteration

    @hookimpl
    def rlengine_checkpoint_saved(self, run, iteration, path):
        if iteration == self.iteration:
            raise Interrupted(path)


class Watch:
    """Records the iterations a run goes through, and runs ``check(run)`` at the first one."""

    def __init__(self, check=None):
        self.iterations, self.check = [], check

    @hookimpl
    def rlengine_iteration_end(self, run, iteration, metrics):
        if not self.iterations and self.check is not None:
            self.check(run)
        self.iterations.append((iteration, metrics["env_steps"]))


def _run(config, *plugins):
    extra = [("testing", testing_plugin()), *[(f"p{i}", p) for i, p in enumerate(plugins)]]
    return Engine(config, extra_plugins=extra).train()


def _interrupted_then_resumed(config, stop_at, *plugins):
    with pytest.raises(Exception) as err:  # a hook's exception may arrive wrapped as a PluginError
        _run(config, StopAfterCheckpoint(stop_at))
    assert "Interrupted" in repr(err.value) or isinstance(err.value.__cause__, Interrupted)
    return _run(config, *plugins)


def test_resume_continues_the_counters_and_the_summaries(tmp_path):
    config = tiny_config(str(tmp_path), checkpoint_interval=1, num_env_steps=64, eval_interval=0)
    watch = Watch()
    result = _interrupted_then_resumed(config, 3, watch)
    assert watch.iterations == [(i, 8 * i) for i in range(4, 9)]
    assert result.iterations == 8 and result.env_steps == 64
    assert [r["env_steps"] for r in MemoryWriter.last.rows] == [32, 40, 48, 56, 64]


def test_an_async_run_resumes_its_counters_and_summaries_from_its_checkpoint(tmp_path):
    """docs/resume.md, Async pipeline: a correct continuation from the checkpoint (not an exact one)."""
    config = tiny_config(str(tmp_path), checkpoint_interval=1, num_env_steps=64, eval_interval=0, pipeline="async")
    config["async"] = {"num_env_threads": 2, "num_actor_threads": 1}
    watch = Watch()
    result = _interrupted_then_resumed(config, 3, watch)

    per_iteration = result.env_steps // result.iterations  # an iteration is one batch of an env thread
    assert result.env_steps == 64
    assert watch.iterations == [(i, per_iteration * i) for i in range(4, result.iterations + 1)]  # from iteration 3
    assert [r["env_steps"] for r in MemoryWriter.last.rows] == [step for _, step in watch.iterations]


def _rows_in_time_order(buffer):
    per_env = buffer.rows_per_env
    heads = buffer._head.numpy()
    step_types = buffer._storage[0].numpy()  # step_type is the first leaf of an Experience
    return [[step_types[e][t % per_env] for t in range(max(0, h - per_env), h)] for e, h in enumerate(heads)]


@pytest.mark.parametrize("keep_replay", [True, False])
def test_resume_without_environment_state_never_joins_old_rows_to_new_episodes(tmp_path, keep_replay):
    # The counting env cannot save its state, so the resumed run starts new episodes.
    config = tiny_config(str(tmp_path), algorithm="toy-q", checkpoint_interval=1, num_env_steps=48,
                         eval_interval=0, checkpoint_replay=keep_replay)
    seen = {}

    def check(run):
        seen["rows"] = _rows_in_time_order(run.internals.replay)

    _interrupted_then_resumed(config, 2, Watch(check))
    for rows in seen["rows"]:
        # 2 iterations of 4 steps (+ the first row) before the cut, then the new FIRST row and 4 more
        assert len(rows) == (9 + 5 if keep_replay else 5)
        for before, row in zip(rows, rows[1:]):
            if row == StepType.FIRST:  # every episode start follows an episode end, the cut included
                assert before == StepType.LAST
    if keep_replay:
        assert [rows[8] for rows in seen["rows"]] == [StepType.LAST] * 2  # the row the cut ended


@pytest.fixture
def op_determinism():
    yield
    tf_config.disable_op_determinism()  # process-wide: keep the other tests as they were


def _weights(root_dir):
    path = newest_checkpoint(str(root_dir))
    return {name: tf.train.load_variable(path, name) for name, _ in tf.train.list_variables(path)
            if name.split("/")[0] in ("algorithm", "transformers", "random", "replay")}


def _losses(root_dir):
    with open(root_dir / "metrics.jsonl") as f:
        return [(row["env_steps"], row.get("loss/total")) for row in map(json.loads, f)]


EXACT_RUNS = {
    "ppo": {"train": {"algorithm": "ppo", "env": "CartPole-v1", "num_envs": 2, "unroll_length": 16,
                      "num_env_steps": 192, "transformers": ["normalize"]},
            "ppo": {"num_epochs": 2, "mini_batch_size": 16}},
    "sac": {"train": {"algorithm": "sac", "env": "Pendulum-v1", "num_envs": 1, "unroll_length": 4,
                      "num_env_steps": 48},
            "sac": {"hidden_sizes": [32, 32], "mini_batch_size": 16, "initial_collect_steps": 16,
                    "num_updates_per_iteration": 2, "replay_capacity": 10_000}},
}


@pytest.mark.thorough  # the root suite leaves it out for time; this package's tox env runs it
@pytest.mark.first_party
@pytest.mark.parametrize("algorithm, stop_at", [("ppo", 2), ("sac", 6)])
def test_an_interrupted_deterministic_run_ends_with_the_weights_of_an_uninterrupted_one(
        tmp_path, op_determinism, algorithm, stop_at):
    def config(name):
        base = EXACT_RUNS[algorithm]
        train = {**base["train"], "root_dir": str(tmp_path / name), "deterministic": True, "seed": 5,
                 "checkpoint_interval": 2, "eval_interval": 0, "writers": ["jsonl"]}
        return {**base, "train": train}

    Engine(config("straight")).train()
    with pytest.raises(Exception):
        Engine(config("resumed"), extra_plugins=[("stop", StopAfterCheckpoint(stop_at))]).train()
    assert newest_checkpoint(str(tmp_path / "resumed")).endswith(f"ckpt-{stop_at}")
    Engine(config("resumed")).train()
    straight, resumed = _weights(tmp_path / "straight"), _weights(tmp_path / "resumed")
    assert straight.keys() == resumed.keys() and any(k.startswith("algorithm/") for k in straight)
    if algorithm == "ppo":
        assert any(k.startswith("transformers/") for k in straight)  # the normaliser's statistics
    for name in straight:
        np.testing.assert_array_equal(straight[name], resumed[name], err_msg=name)
    assert _losses(tmp_path / "straight") == _losses(tmp_path / "resumed")  # same rows, none twice


@pytest.mark.first_party
def test_cli_refuses_another_config_in_one_line_and_force_resumes(tmp_path, capsys):
    from rlengine import cli

    args = ["train", "--algorithm", "ppo", "--env", "CartPole-v1", "--num-envs", "2", "--num-env-steps", "64",
            "--root-dir", str(tmp_path), "--set", "train.unroll_length=16", "--set", 'train.writers=["jsonl"]',
            "--set", "train.eval_interval=0", "--set", "train.checkpoint_interval=1"]
    assert cli.main(args) == 0
    capsys.readouterr()
    assert cli.main([*args, "--seed", "3"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "train.seed" in err and "--force" in err
    assert cli.main([*args, "--seed", "3", "--num-env-steps", "96", "--force"]) == 0
    with open(tmp_path / "metrics.jsonl") as f:
        assert [row["env_steps"] for row in map(json.loads, f)] == [32, 64, 96]  # continued, not restarted
