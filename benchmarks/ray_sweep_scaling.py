"""Sweeps on Ray: wall time of N seeds (or tune trials) with the nodes of a cluster, and Ray's cost per run.

Every figure is one command a user types, timed whole (process start, imports, Ray's start included):

* ``local, jobs J``: ``rlengine train --seeds 0-(N-1) --jobs J`` (``rlengine tune --jobs J``): processes on
  this machine, no Ray;
* ``ray, K nodes``: the same with ``--ray --ray-address ADDR`` (``tune --ray --concurrent K``) on a fresh
  ``ray.cluster_utils.Cluster`` of a head with no CPUs and K worker nodes of one CPU each, so each node
  trains one seed or trial at a time.

Each seed or trial is PPO on CartPole-v1 for ``--env-steps`` (no evaluation for seeds; trials evaluate every
8 iterations for their objective, and are never pruned). Printed per sweep: seconds, speed-up over one node,
and Ray's cost per run: (ray on one node - local with one job) / N.
On a 2-core machine two nodes are the most that do not share a core.

    nice -n 10 python benchmarks/ray_sweep_scaling.py [--runs 4] [--env-steps 49152] [--nodes 1,2] [--sweep seeds]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time

from ray.cluster_utils import Cluster
from rlengine_ray.cluster import LOCAL_SYSTEM_CONFIG


def command(kind: str, runs: int, root: str, args: argparse.Namespace, jobs: int = 1, address: str = "") -> list:
    budget = ["--num-env-steps", str(args.env_steps)]
    if kind == "seeds":
        where = ["--ray", "--ray-address", address] if address else ["--jobs", str(jobs)]
        return ["train", "--seeds", f"0-{runs - 1}", *where, "--root-dir", root, *budget,
                "--set", "train.eval_interval=0"]
    where = ["--ray", "--ray-address", address, "--concurrent", str(jobs)] if address else ["--jobs", str(jobs)]
    return ["tune", *where, "--trials", str(runs), "--startup-trials", str(runs), "--pruner", "none",
            "--param", "ppo.learning_rate=loguniform:1e-4:3e-3", "--tune-dir", root, *budget,
            "--set", "train.eval_interval=8"]


def timed(argv: list) -> float:
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "rlengine.cli", *argv], capture_output=True, text=True)
    seconds = time.monotonic() - start
    if done.returncode:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return seconds


def on_cluster(kind: str, nodes: int, args: argparse.Namespace) -> float:
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "_system_config": LOCAL_SYSTEM_CONFIG})
    root = tempfile.mkdtemp(prefix="sweep-scaling-")
    try:
        for _ in range(nodes):
            cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        return timed(command(kind, args.runs, root, args, jobs=nodes, address=cluster.address))
    finally:
        cluster.shutdown()
        shutil.rmtree(root, ignore_errors=True)


def local(kind: str, jobs: int, args: argparse.Namespace) -> float:
    root = tempfile.mkdtemp(prefix="sweep-scaling-")
    try:
        return timed(command(kind, args.runs, root, args, jobs=jobs))
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=4, help="seeds (trials) in each sweep")
    parser.add_argument("--env-steps", type=int, default=49152, help="each seed's (trial's) budget")
    parser.add_argument("--nodes", default="1,2", help="worker node counts to time")
    parser.add_argument("--sweep", choices=["seeds", "tune", "both"], default="both")
    args = parser.parse_args()
    node_counts = [int(n) for n in args.nodes.split(",")]
    for kind in (["seeds", "tune"] if args.sweep == "both" else [args.sweep]):
        print(f"{kind}: {args.runs} runs of PPO CartPole-v1, {args.env_steps:,} env steps each", flush=True)
        alone = local(kind, 1, args)
        print(f"  local, jobs 1: {alone:.1f} s", flush=True)
        print(f"  local, jobs 2: {local(kind, 2, args):.1f} s", flush=True)
        one = None
        for nodes in node_counts:
            seconds = on_cluster(kind, nodes, args)
            one = one or (seconds if nodes == 1 else None)
            speedup = f", {one / seconds:.2f}x one node" if one else ""
            print(f"  ray, {nodes} node{'s' * (nodes > 1)}: {seconds:.1f} s{speedup}", flush=True)
        if one:
            print(f"  Ray's cost per run (ray on one node - local with one job) / {args.runs}: "
                  f"{(one - alone) / args.runs:.1f} s", flush=True)


if __name__ == "__main__":
    main()
