"""Offline to online: an offline run's checkpoint starts a run that steps its environment (train.init_from),
whose replay starts with the dataset (train.dataset)."""

import numpy as np
import pytest
import tensorflow as tf

import rlengine
from rlengine import hookimpl
from rlengine.run.checkpoints.store import newest_checkpoint

pytest.importorskip("rlengine_algorithms", reason="iql builds on the algorithms plugin's twin critics")

IQL = {"mini_batch_size": 32, "hidden_sizes": [16, 16], "initial_collect_steps": 32}


class FirstIteration:
    """What the run holds after its first iteration."""

    rows = pipeline = None

    @hookimpl
    def rlengine_iteration_end(self, run, iteration, metrics):
        if iteration == 1:
            self.rows, self.pipeline = int(run.internals.replay.num_rows()), run.config.train.pipeline


def actor_weights(root_dir):
    prefix = newest_checkpoint(str(root_dir))
    return {name: tf.train.load_variable(prefix, name) for name, _ in tf.train.list_variables(prefix)
            if name.startswith("algorithm/") and "actor" in name and "OPTIMIZER" not in name}


@pytest.mark.thorough  # an offline run, then an online one
def test_an_offline_iql_run_continues_online_with_its_dataset_in_the_replay(record, offline_plugins, tmp_path):
    record("pendulum/random-v0", "Pendulum-v1", 3)  # 3 episodes of 200 steps: 603 rows
    offline = {"train": dict(algorithm="iql", dataset="pendulum/random-v0", num_env_steps=20, eval_interval=0,
                             writers=[], root_dir=str(tmp_path / "offline")),
               "offline": {"updates_per_iteration": 10}, "iql": IQL}
    rlengine.Engine(offline, extra_plugins=offline_plugins).train()
    seen = FirstIteration()
    online = {"train": dict(algorithm="iql", dataset="pendulum/random-v0", init_from=str(tmp_path / "offline"),
                            num_env_steps=8, num_envs=1, unroll_length=8, eval_interval=0, writers=[],
                            root_dir=str(tmp_path / "online")), "iql": IQL}  # 8 env steps: still warming up, no update yet
    engine = rlengine.Engine(online, extra_plugins=[*offline_plugins, ("seen", seen)])
    assert (engine.config.train.pipeline, engine.config.train.env) == ("sync", "Pendulum-v1")
    assert engine.train().env_steps == 8
    assert seen.rows == 603 + 9  # the dataset's rows, then the unroll's (its first row included)
    before, after = actor_weights(tmp_path / "offline"), actor_weights(tmp_path / "online")
    assert before and not [name for name in before if not np.array_equal(before[name], after[name])]
