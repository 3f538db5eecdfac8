"""One real local Ray for the tests that share it (Ray has no local mode any more); tests that start
their own (a two-node cluster, a run in a subprocess) do not use it.

Every test module here is marked ``ray`` (``pytestmark``): they start Ray processes, which costs more than
the root suite's budget allows, so ``python -m pytest`` leaves them out and ``tox -e ray`` (CI) runs them.
"""

from __future__ import annotations

import pytest
import ray
from rlengine_ray.cluster import start_local_ray
from rlengine_ray.testing import ray_config, testing_plugins

from rlengine.run.build import build_components
from rlengine.run.engine import Engine


@pytest.fixture(scope="module")
def local_ray():
    """A real local Ray of 2 CPUs, as this machine has: runners ask for half a CPU each."""
    if ray.is_initialized():
        ray.shutdown()
    start_local_ray(2)
    yield
    ray.shutdown()


@pytest.fixture
def components_of(tmp_path):
    """``components_of(**settings)``: the run's components, built as a run builds them, with the ray
    pipeline not yet started (closed after the test)."""
    built = []

    def build(**kwargs):
        engine = Engine(ray_config(str(tmp_path / "run"), **kwargs), extra_plugins=testing_plugins())
        built.append(build_components(engine.config, engine.plugins, str(tmp_path / "run"), writers=False))
        return built[-1]

    yield build
    for components in built:
        components.close()
