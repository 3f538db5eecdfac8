"""One real local Ray for the tests that share it (Ray has no local mode any more); tests that start
their own (a two-node cluster, a run in a subprocess) do not use it.

Every test here is marked ``ray``: they start Ray processes, which costs more than the root suite's
budget allows, so ``python -m pytest`` leaves them out and ``tox -e ray`` (CI) runs them.
"""

from __future__ import annotations

import pytest
import ray
import rlengine_ray.testing
from rlengine_ray.cluster import WORKER_ENV

from rlengine.run.build import build_components
from rlengine.run.engine import Engine
from rlengine.testing.kit import testing_plugin, tiny_config


def pytest_collection_modifyitems(items):
    for item in items:
        if "plugins/ray/tests" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.ray)


@pytest.fixture(scope="module")
def local_ray():
    """A local Ray of 4 logical CPUs (2 cores here): runners ask for half a CPU each."""
    if ray.is_initialized():
        ray.shutdown()
    ray.init(num_cpus=4, include_dashboard=False, configure_logging=False, runtime_env={"env_vars": WORKER_ENV})
    yield
    ray.shutdown()


def plugins() -> list:
    return [("testing", testing_plugin()), ("ray-testing", rlengine_ray.testing)]


def ray_config(tmp_path, *, ray_section=None, sections=None, **train) -> dict:
    """The testing kit's tiny config on the ray pipeline: 2 runners of 2 copies, half a CPU each."""
    values = dict(pipeline="ray", algorithm="probe", env="chaos", num_envs=4, unroll_length=4,
                  num_env_steps=64, eval_interval=0, writers=[])
    values.update(train)
    config = tiny_config(str(tmp_path / "run"), **values)
    config["ray"] = {"num_runners": 2, "num_cpus_per_runner": 0.5, "start_timeout": 120.0, **(ray_section or {})}
    config.update(sections or {})
    return config


@pytest.fixture
def components_of(tmp_path):
    """``components_of(**settings)``: the run's components, built as a run builds them, with the ray
    pipeline not yet started (closed after the test)."""
    built = []

    def build(**kwargs):
        engine = Engine(ray_config(tmp_path, **kwargs), extra_plugins=plugins())
        built.append(build_components(engine.config, engine.plugins, str(tmp_path / "run"), writers=False))
        return built[-1]

    yield build
    for components in built:
        components.close()
