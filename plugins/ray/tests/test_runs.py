"""Whole runs through the ray pipeline: bad settings refused in one line, statistics merged, resume."""

from __future__ import annotations

import numpy as np
import pytest
from rlengine_ray.testing import ray_config, testing_plugins

from rlengine import ConfigError, hookimpl
from rlengine.run.engine import Engine


def _engine(tmp_path, **settings) -> Engine:
    return Engine(ray_config(str(tmp_path / "run"), **settings), extra_plugins=testing_plugins())


@pytest.mark.parametrize("settings, culprit", [
    ({"num_envs": 5}, "train.num_envs = 5 must equal ray.num_runners = 2 x ray.envs_per_runner"),
    ({"ray_section": {"max_in_flight_per_runner": 3}}, "ray.max_policy_lag = 1 is below ray.max_in_flight_per_runner"),
])
def test_settings_that_cannot_run_are_refused_in_one_line_before_ray_starts(tmp_path, settings, culprit):
    with pytest.raises(ConfigError) as caught:
        _engine(tmp_path, **settings).train()
    assert culprit in str(caught.value) and "\n" not in str(caught.value)
    assert not (tmp_path / "run" / "checkpoints").exists()


def test_an_address_nobody_answers_is_one_line(tmp_path):
    with pytest.raises(ConfigError) as caught:
        _engine(tmp_path, ray_section={"address": "127.0.0.1:9"}).train()  # the discard port: nothing listens
    message = str(caught.value)
    assert message.startswith("ray.address = '127.0.0.1:9': nothing answers there") and "\n" not in message


@pytest.mark.ray  # starts Ray processes (the tests above refuse before Ray starts)
def test_normalize_statistics_merge_every_runners_observations(local_ray, components_of):
    components = components_of(transformers=["normalize"])
    pipeline, normalize = components.pipeline, components.chain.transformers[0]
    merged = []
    original = pipeline._receive
    pipeline._receive = lambda: merged.append(original()) or merged[-1]
    pipeline.start()
    env_steps = 0
    for _ in range(8):
        env_steps += pipeline.iterate(env_steps).env_steps
    pipeline.stop()
    # the chaos env observes [t, env_id]: each unroll's 4 new rows x 2 copies were merged, and the env-id
    # column's mean is that of the copies in proportion to their rows
    rows = {r: 8 * sum(u.runner == r for u in merged) for r in (0, 1)}
    assert normalize.count.numpy() == sum(rows.values())
    expected_id_mean = (rows[0] * 0.5 + rows[1] * 2.5) / sum(rows.values())
    np.testing.assert_allclose(normalize.mean[0].numpy()[1], expected_id_mean, rtol=1e-9)


@pytest.mark.ray
def test_each_row_groups_episodes_are_reported_from_the_runners_environments(local_ray, tmp_path):
    from rlengine.testing import MemoryWriter

    result = _engine(tmp_path, env="teams", writers=["memory"]).train()
    assert result.env_steps == 64
    rows = [row for row in MemoryWriter.last.rows if "train/episode_return" in row]
    assert rows
    for row in rows:  # the chaos env's episodes: 4 steps of reward 1 + action, 4 to 8
        for team in ("even", "odd"):  # copies 0, 2 and 1, 3: one of each in each runner
            assert 4.0 <= row[f"train/{team}/episode_return"] <= 8.0
            assert row[f"train/{team}/win_rate"] == 1.0
        assert row["train/win_rate"] == 1.0 and row["train/loss_rate"] == 0.0


class StopAt:
    """Fails the run right after the checkpoint of iteration ``at``, like a crash."""

    def __init__(self, at: int):
        self.at = at

    @hookimpl
    def rlengine_checkpoint_saved(self, run, iteration, path):
        if iteration == self.at:
            raise KeyboardInterrupt


@pytest.mark.ray
def test_resume_continues_with_new_runners(local_ray, tmp_path):
    config = ray_config(str(tmp_path / "run"), algorithm="probe-q", num_env_steps=96, checkpoint_interval=1)
    with pytest.raises(KeyboardInterrupt):
        Engine(config, extra_plugins=[*testing_plugins(), ("stop", StopAt(4))]).train()
    result = Engine(config, extra_plugins=testing_plugins()).train()
    assert result.env_steps == 96 and result.iterations == 12  # 8 steps an iteration, 4 of them before the crash


ENV_MODULE = """
import gymnasium
from gymnasium.envs.classic_control import CartPoleEnv

class MarkedCartPole(CartPoleEnv):
    pass

gymnasium.register("MarkedCartPole-v0", entry_point=f"{__name__}:MarkedCartPole", max_episode_steps=50)
"""


@pytest.mark.ray
@pytest.mark.first_party
def test_env_registered_by_a_module_id_loads_inside_the_runners(local_ray, tmp_path, monkeypatch):
    """``module:Env-v0``: the runners import the module themselves, from the driver's import path."""
    (tmp_path / "marked_envs.py").write_text(ENV_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    config = ray_config(str(tmp_path / "run"), algorithm="ppo", env="marked_envs:MarkedCartPole-v0",
                        num_envs=4, unroll_length=8, num_env_steps=64, writers=[])
    result = Engine(config).train()
    assert result.env_steps == 64


@pytest.mark.ray
def test_a_graph_environment_trains_its_runners_stepping_it_inside_their_graph(local_ray, components_of, tmp_path):
    from rlengine import RemoteCollector
    from tests.pipelines.test_graph_environments import PYTHON_OPS, _op_types

    components = components_of(env="graph-counting", jit_compile_unroll=True)
    collector = RemoteCollector(components.pipeline.context.collector_recipe(2, 2))  # a runner's, built here
    experience, dropped, _ = collector.collect()
    observation = experience[3]  # the flat rows: step_type, reward, discount, observation, ...
    assert not dropped and observation.shape == (5, 2, 2) and (observation[..., 1] == [2, 3]).all()  # env ids 2, 3
    assert not collector.collector.env.calls_python and not _op_types(collector.collector.run.function) & PYTHON_OPS
    assert collector.collector.jit_compile  # train.jit_compile_unroll, as in a local collector
    collector.close()

    result = Engine(ray_config(str(tmp_path / "run"), env="graph-counting", eval_interval=2),
                    extra_plugins=testing_plugins()).train()
    assert result.env_steps == 64 and len(result.eval_history) == 2
