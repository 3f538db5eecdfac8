"""The examples learn through Ray (slow: ``pytest -m "ray and slow" plugins/ray/tests``; the figures are
in the ray pipeline's docs). Each run starts and owns its local Ray, as ``rlengine train`` does."""

from __future__ import annotations

import os

import pytest
import ray

from rlengine.run.engine import Engine

pytestmark = pytest.mark.ray  # starts Ray processes: tox -e ray runs these

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples")


@pytest.mark.slow
@pytest.mark.parametrize("example", ["ppo_cartpole_ray.toml", "sac_pendulum_ray.toml"])
def test_example_reaches_its_target(tmp_path, example):
    if ray.is_initialized():
        ray.shutdown()
    engine = Engine(os.path.join(EXAMPLES, example), [f"train.root_dir={tmp_path / 'run'}"])
    result = engine.train()
    assert result.reached_target, (example, result.eval_history)
    assert not ray.is_initialized()  # the run shut its own Ray down
