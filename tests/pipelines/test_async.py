"""The asynchronous pipeline: routing, errors from any thread, and shutdown at any moment."""

import random
import threading
import time

import numpy as np
import pytest
import tensorflow as tf

from rlengine import hookimpl
from rlengine.api.data import StepType
from rlengine.errors import ConfigError, WorkerError
from rlengine.run.build import build_components
from rlengine.run.engine import Engine
from rlengine.testing import MemoryWriter, ToyQAlgorithm, testing_plugin, tiny_config
from rlengine.testing.echo import echo_plugin
from rlengine.testing.failing import reset_fault_plan


def _plugins():
    return [("testing", testing_plugin()), ("echo", echo_plugin())]


def echo_config(tmp_path, batch_sizes=(1, 2, 3), actors=2, steps=600, **echo):
    cfg = tiny_config(str(tmp_path / "run"), algorithm="echo", env="echo", num_envs=sum(batch_sizes),
                      num_env_steps=steps, unroll_length=4, eval_interval=0, pipeline="async")
    cfg["async"] = {"num_env_threads": len(batch_sizes), "num_actor_threads": actors,
                    "env_batch_sizes": list(batch_sizes)}
    cfg["echo"] = {"max_delay": 0.001, **echo}
    return cfg


def worker_threads():
    return [t.name for t in threading.enumerate() if t.name.startswith(("env thread", "actor thread"))]


@pytest.mark.parametrize("actors", [2, 0])  # 0: each env thread acts itself
def test_every_env_thread_gets_exactly_its_own_actions(tmp_path, actors):
    """Uneven batches, two actors or none: EchoEnv raises on any action computed for another copy or step."""
    engine = Engine(echo_config(tmp_path, actors=actors), extra_plugins=_plugins())
    result = engine.train()
    assert result.env_steps >= 600
    assert worker_threads() == []


def test_routing_with_first_env_ids_given_and_one_actor_per_thread(tmp_path):
    cfg = echo_config(tmp_path, batch_sizes=(2, 1, 3), actors=3, steps=300)
    cfg["async"]["first_env_ids"] = [4, 0, 1]
    result = Engine(cfg, extra_plugins=_plugins()).train()
    assert result.env_steps >= 300


def test_stats_count_episodes_of_every_copy(tmp_path):
    cfg = echo_config(tmp_path, batch_sizes=(1, 3), actors=1, steps=480)
    Engine(cfg, extra_plugins=_plugins()).train()
    rows = MemoryWriter.last.rows
    finished = sum(r.get("train/episodes", 0) for r in rows)
    lengths = {r["train/episode_length"] for r in rows if "train/episode_length" in r}
    assert finished >= 480 // 6 - 4 * 2  # 6 steps an episode (5 + the reset step); 4 copies may be mid-episode
    assert lengths == {5.0}  # every copy's episode counted whole: columns were matched to their env ids
    assert all(r["async/policy_lag"] >= 0 for r in rows if "async/policy_lag" in r)


@pytest.mark.parametrize("where, actors", [("env", 2), ("algorithm", 2), ("algorithm", 0)])
def test_a_failing_thread_stops_the_run_naming_it(tmp_path, where, actors):
    cfg = echo_config(tmp_path, steps=100_000, actors=actors)
    cfg["train"]["max_env_restarts"] = 0  # the first env error stops the run (no recreation)
    cfg["echo"]["env_fails_at_step" if where == "env" else "policy_fails_at_step"] = 7 if where == "env" else 3
    engine = Engine(cfg, extra_plugins=_plugins())
    started = time.monotonic()
    with pytest.raises(WorkerError) as info:
        engine.train()
    message = str(info.value)
    assert time.monotonic() - started < 30
    if where == "env":
        assert "env thread" in message and "echo" in message and "fail at step 7" in message
    else:  # without actor threads the env thread that ran the policy is named
        assert ("actor thread" if actors else "env thread") in message and "fails at this step" in message
    assert "\n" not in message
    assert worker_threads() == []


def test_a_recreated_env_drops_its_broken_unroll_and_training_goes_on(tmp_path):
    cfg = echo_config(tmp_path, steps=600, env_fails_at_step=6, env_fails_once=True)
    cfg["train"]["max_env_restarts"] = 1
    Engine(cfg, extra_plugins=_plugins()).train()
    rows = [r for r in MemoryWriter.last.rows if "train/env_restarts" in r]
    assert rows[-1]["train/env_restarts"] == 3  # each of the 3 env threads recreated its env once
    assert rows[-1]["train/dropped_unrolls"] == 3  # and the unroll that straddled the crash was dropped
    assert rows[-1]["env_steps"] >= 600


@pytest.mark.thorough  # the root suite leaves it out for time; this package's tox env runs it
def test_a_hanging_in_process_env_stops_the_run_naming_it(tmp_path):
    cfg = tiny_config(str(tmp_path / "run"), env="faulty", num_envs=4, num_env_steps=100_000, eval_interval=0,
                      pipeline="async", env_step_timeout=1.0)
    cfg["async"] = {"num_env_threads": 2}
    cfg["faulty"] = {"plan": "async-hang", "hang_at_step": 5, "hang_seconds": 6.0}
    reset_fault_plan("async-hang")
    engine = Engine(cfg, extra_plugins=_plugins())
    started = time.monotonic()
    with pytest.raises(WorkerError, match=r"env thread \d \(env 'faulty'.*found by the watchdog\)") as info:
        engine.train()
    assert time.monotonic() - started < 30  # the watchdog ended it (it says so), not the hang's end
    assert "timeout" in str(info.value).lower() or "did not answer" in str(info.value)
    deadline = time.monotonic() + 15  # the hung thread leaves once its step returns into closed queues
    while worker_threads() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert worker_threads() == []


@pytest.mark.thorough  # the root suite leaves it out for time; this package's tox env runs it
@pytest.mark.parametrize("actors", [2, 0])
def test_start_and_stop_at_random_moments_leaves_no_thread(tmp_path, actors):
    cfg = echo_config(tmp_path, steps=10**9, actors=actors)
    engine = Engine(cfg, extra_plugins=_plugins())
    components = build_components(engine.config, engine.plugins, str(tmp_path / "run"), writers=False)
    pipeline = components.pipeline
    rng = random.Random(0)
    try:
        for trial in range(50):
            pipeline.start()  # fresh queues each time; the traced graphs are reused
            time.sleep(rng.uniform(0, 0.05))
            for _ in range(rng.randrange(3)):
                pipeline.iterate(0)
            assert pipeline.stop() == [], f"trial {trial}: threads still alive"
            assert worker_threads() == []
    finally:
        components.close()


class RoomyToyQ(ToyQAlgorithm):
    replay_capacity = 600  # 200 rows a copy hold every row of the test: none overwritten


class Roomy:
    @hookimpl
    def rlengine_register_algorithms(self, register):
        register("toy-q-roomy", RoomyToyQ)


@pytest.mark.parametrize("actors", [1, 0])
def test_off_policy_replay_stores_every_collected_row_once_and_cuts_episodes_at_a_restart(tmp_path, actors):
    cfg = tiny_config(str(tmp_path / "run"), algorithm="toy-q-roomy", num_envs=3, num_env_steps=10**9, eval_interval=0,
                      pipeline="async")
    cfg["async"] = {"num_env_threads": 2, "num_actor_threads": actors, "env_batch_sizes": [1, 2]}
    engine = Engine(cfg, extra_plugins=[*_plugins(), ("roomy", Roomy())])
    components = build_components(engine.config, engine.plugins, str(tmp_path / "run"), writers=False)
    pipeline, buffer = components.pipeline, components.replay
    leaves = tf.nest.pack_sequence_as(buffer._rings.spec, list(range(len(buffer._storage))))
    per_env, step_types = buffer._rings.per_env, buffer._storage[leaves.step_type]
    expected = np.zeros(3, np.int64)
    try:
        for cycle in range(2):  # the second start resets the envs: each thread stores its first row again
            pipeline.start()
            unrolls = np.zeros(3, np.int64)
            for i in range(20):  # past toy-q's warm-up (8 env steps), so replay updates run too
                iteration = pipeline.iterate(int(expected.sum() + unrolls.sum() * 4))
                unrolls[iteration.experience.env_id.numpy()[0]] += 1
                if i >= 4 and unrolls.min() > 0:  # every thread's unrolls reached replay
                    break
            pipeline.stop()
            assert unrolls.min() > 0, f"start {cycle}: an env thread delivered nothing in 20 unrolls: {unrolls}"
            expected += np.where(unrolls > 0, 1 + 4 * unrolls, 0)  # row 0 once per start, then rows 1..4
            heads = buffer._head.numpy()
            np.testing.assert_array_equal(heads, expected)
            if cycle == 0:
                last_before_restart = heads.copy()
        assert heads.max() <= per_env  # nothing overwritten yet: the rows before the restart are still held
        newest_before = step_types.numpy()[np.arange(3), (last_before_restart - 1) % per_env]
        assert (newest_before == StepType.LAST).all()  # no replayed transition joins the two starts
    finally:
        components.close()


@pytest.mark.parametrize("section, message", [
    ({"num_env_threads": 4}, "does not split evenly"),
    ({"num_env_threads": 2, "env_batch_sizes": [2, 2]}, "summing to train.num_envs = 6"),
    ({"num_env_threads": 2, "env_batch_sizes": [3, 3], "first_env_ids": [0, 2]}, "once each"),
    ({"num_env_threads": 2, "num_actor_threads": 3}, "would serve no env thread"),
    ({"num_env_threads": 3, "learner_queue_capacity": 4, "max_policy_lag": 2}, "most would be dropped"),
])
def test_settings_that_cannot_run_are_refused_naming_the_key(tmp_path, section, message):
    cfg = tiny_config(str(tmp_path / "run"), num_envs=6, pipeline="async")
    cfg["async"] = section
    with pytest.raises(ConfigError, match=message) as info:
        Engine(cfg, extra_plugins=_plugins())  # refused when built, before the run dir is written
    assert "async." in str(info.value) or "train.num_envs" in str(info.value)
    assert not (tmp_path / "run").exists()


def test_unknown_async_key_is_a_config_error(tmp_path):
    cfg = tiny_config(str(tmp_path / "run"), pipeline="async")
    cfg["async"] = {"num_env_thread": 2}
    with pytest.raises(ConfigError, match="async.num_env_thread.*num_env_threads"):
        Engine(cfg, extra_plugins=_plugins())
