"""A run joins a running two-node cluster (``ray.address``), and survives losing a node."""

from __future__ import annotations

import time

import pytest
import ray
from ray.cluster_utils import Cluster
from rlengine_ray.cluster import LOCAL_SYSTEM_CONFIG
from rlengine_ray.testing import ray_config, testing_plugins

from rlengine.run.build import build_components
from rlengine.run.engine import Engine

pytestmark = pytest.mark.ray  # starts Ray processes: tox -e ray runs these


@pytest.fixture
def cluster():
    """Two nodes of one CPU each on this machine (the driver joins by address, as `ray start` clusters)."""
    if ray.is_initialized():
        ray.shutdown()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "_system_config": LOCAL_SYSTEM_CONFIG})
    cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    yield cluster
    if ray.is_initialized():
        ray.shutdown()
    cluster.shutdown()


def _components(tmp_path, cluster, **settings):
    # one CPU per runner: one runner per node
    config = ray_config(str(tmp_path / "run"), ray_section={"address": cluster.address, "num_cpus_per_runner": 1.0}, **settings)
    engine = Engine(config, extra_plugins=testing_plugins())
    return build_components(engine.config, engine.plugins, str(tmp_path / "run"), writers=False)


def test_run_joins_a_cluster_and_survives_losing_a_node(tmp_path, cluster):
    components = _components(tmp_path, cluster)
    pipeline = components.pipeline
    try:
        pipeline.start()
        nodes = {d["node_id"] for d in pipeline.fleet.descriptions}
        assert len(nodes) == 2  # one runner on each node
        env_steps = 0
        for _ in range(3):
            env_steps += pipeline.iterate(env_steps).env_steps
        worker = next(n for n in cluster.worker_nodes)
        lost = next(r for r, d in enumerate(pipeline.fleet.descriptions) if d["node_id"] == worker.node_id)
        cluster.add_node(num_cpus=1)  # where the lost runner can be restarted
        cluster.remove_node(worker)
        deadline = time.monotonic() + 120  # Ray notices the node is gone, then rebuilds the runner on the new one
        while time.monotonic() < deadline and pipeline.fleet.descriptions[lost]["node_id"] == worker.node_id:
            env_steps += pipeline.iterate(env_steps).env_steps
        assert pipeline.fleet.restarts[lost] >= 1
        assert pipeline.fleet.descriptions[lost]["node_id"] not in nodes  # it came back on the new node
        for _ in range(3):
            env_steps += pipeline.iterate(env_steps).env_steps
    finally:
        components.close()
    assert not ray.is_initialized()  # the run disconnected; the cluster itself keeps running
