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


def test_seeds_on_a_cluster_that_loses_a_node_each_finish_once(tmp_path, cluster, capsys):
    """``train --seeds --ray`` on the cluster and a third node: the node of a seed is removed after that seed's
    first checkpoint; Ray starts its actor again on a free node, the run resumes there, and every seed ends at
    the budget, trained once."""
    import glob
    import json
    import re
    import threading

    from rlengine.cli import main

    node_line = re.compile(r"^== .*: on Ray node \S+ (\S+) \(worker pid \d+\)$", re.M)
    root, lost = tmp_path / "seeds", []
    cluster.add_node(num_cpus=1)  # a third node: two seeds fill two, the lost one goes on in the free one
    cluster.wait_for_nodes()
    workers = {node.node_id: node for node in cluster.worker_nodes}

    def remove_the_worker_node_after_a_checkpoint() -> None:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not lost:
            for seed in (0, 1):
                log, run = root / f"seed-{seed}.log", root / f"seed-{seed}"
                placed = node_line.findall(log.read_text(encoding="utf-8")) if log.exists() else []
                if placed and placed[-1] in workers and glob.glob(str(run / "checkpoints/ckpt-*.complete")):
                    lost.append((seed, placed[-1]))
                    cluster.remove_node(workers[placed[-1]])
                    return
            time.sleep(0.2)

    watcher = threading.Thread(target=remove_the_worker_node_after_a_checkpoint, daemon=True)
    watcher.start()
    words = ["train", "--seeds", "0-1", "--ray", "--ray-address", cluster.address, "--root-dir", str(root),
             "--num-env-steps", "6144", "--set", "train.eval_interval=0", "--set", "train.checkpoint_interval=1"]
    assert main(words) == 0
    watcher.join(5)
    assert lost, "no seed ran on the worker node"
    (seed, node), = lost
    placed = node_line.findall((root / f"seed-{seed}.log").read_text(encoding="utf-8"))
    assert len(placed) == 2 and placed[0] == node != placed[1]  # retried once, on another node
    second_life = (root / f"seed-{seed}.log").read_text(encoding="utf-8").split("on Ray node")[-1]
    assert int(re.search(r"^iter (\d+) \|", second_life, re.M)[1]) > 1  # resumed from its checkpoint
    for seed in (0, 1):
        markers = glob.glob(str(root / f"seed-{seed}" / "checkpoints" / "ckpt-*.complete"))
        newest = max(markers, key=lambda p: int(re.search(r"ckpt-(\d+)\.complete$", p)[1]))
        assert json.loads(open(newest, encoding="utf-8").read())["env_steps"] == 6144
    out = capsys.readouterr().out
    assert len(re.findall(r"^\s+\d\s+finished\s+6144", out, re.M)) == 2
