"""Chaos for sweeps on Ray: one of two worker nodes removed mid-sweep, run after run.

``--runs`` runs (default 20), each on a fresh cluster on this machine
(``ray.cluster_utils.Cluster``): a head with no CPUs, so nothing trains
there, and two worker nodes of one CPU each. Each run is one sweep, started
as a user starts it, in its own process: ``rlengine train --seeds 0-1 --ray
--ray-address ADDR`` (``--sweep seeds``), or ``rlengine tune --ray
--concurrent 2`` of ``--trials`` trials (``--sweep tune``); ``--sweep both``
(the default) alternates, seeds on even runs. Every seed or trial is a short
PPO CartPole run checkpointed every iteration.

In run i (``random.Random(seed + i)``) one of the two worker nodes, drawn at
random, is removed (``Cluster.remove_node``: its raylet and workers killed,
and the runs they started die with them) a random 0..``--kill-window``
seconds after the first complete checkpoint of any seed or trial, if the
sweep has not ended by then. No node replaces it (``--replace`` adds one):
the survivor has the CPU to finish everything, so the lost seed or trial must
wait for it and resume there, the harder case.

Checked after each run: the command exited 0; every seed (trial) has its one
run directory and no other exists; each ended with a complete checkpoint at
the full budget; none was trained twice from scratch (in a seed's log, one
life starts at iteration 1 and every later life, on another node, at a later
one: it resumed from its checkpoint; for a trial, its ``metrics.jsonl``,
whose ``wall_time`` starts again in each process); every seed or trial that
trained on the removed node started again; and
no process of the cluster or the sweep is left once the cluster is shut
down (this process is their subreaper: every orphan is re-parented here and
found). One line a run; at the end N/N finished, duplicated 0, lost 0.

    nice -n 10 python benchmarks/ray_sweep_chaos.py [--runs 20] [--seed 0] [--sweep both|seeds|tune]
        [--seeds 0-1] [--trials 2] [--env-steps 12288] [--kill-window 10] [--replace] [--timeout 900]
"""

import argparse
import ctypes
import glob
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from ray.cluster_utils import Cluster
from rlengine_ray.cluster import LOCAL_SYSTEM_CONFIG

NODE_LINE = re.compile(r"^== .*: on Ray node \S+ (\S+) \(worker pid \d+\)$", re.M)
ITER_LINE = re.compile(r"^iter (\d+) \|", re.M)
PR_SET_CHILD_SUBREAPER = 36


def sweep_command(kind: str, root: str, address: str, args) -> list:
    common = ["--num-env-steps", str(args.env_steps), "--set", "train.eval_interval=0",
              "--set", "train.checkpoint_interval=1"]
    if kind == "seeds":
        return ["train", "--seeds", args.seeds, "--ray", "--ray-address", address, "--root-dir", root, *common]
    # a trial's objective needs evaluations: every 8 iterations; --pruner none: every trial trains its budget
    return ["tune", "--ray", "--ray-address", address, "--concurrent", "2", "--trials", str(args.trials),
            "--startup-trials", str(args.trials), "--pruner", "none", "--param", "ppo.learning_rate=loguniform:1e-4:3e-3",
            "--tune-dir", root, *common[:2], "--set", "train.eval_interval=8",
            "--set", "train.checkpoint_interval=1"]


def run_dirs(kind: str, root: str) -> list:
    pattern = "seed-*" if kind == "seeds" else "trial-*"
    return sorted(p for p in glob.glob(os.path.join(root, pattern)) if os.path.isdir(p))


def checkpoint_steps(run_dir: str) -> int:
    """Env steps of the newest complete checkpoint of ``run_dir`` (0: none)."""
    markers = glob.glob(os.path.join(run_dir, "checkpoints", "ckpt-*.complete"))
    if not markers:
        return 0
    newest = max(markers, key=lambda p: int(re.search(r"ckpt-(\d+)\.complete$", p)[1]))
    with open(newest, encoding="utf-8") as f:
        return int(json.load(f)["env_steps"])


def read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def lives(kind: str, run_dir: str) -> list:
    """The first iteration of each life of a run: [1] when it ran once, [1, k > 1] when it resumed once."""
    if kind == "seeds":
        text = read(run_dir + ".log")
        return [int(m[1]) if (m := ITER_LINE.search(part)) else 0 for part in text.split("on Ray node")[1:]]
    rows = [json.loads(line) for line in read(os.path.join(run_dir, "metrics.jsonl")).splitlines() if line.strip()]
    firsts, last = [], None
    for row in rows:  # wall_time counts from its process's start: a lower one than the row before is a new life
        if last is None or row["wall_time"] < last:
            firsts.append(int(row["iteration"]))
        last = row["wall_time"]
    return firsts


def wanted(kind: str, args) -> int:
    if kind == "tune":
        return args.trials
    first, _, last = args.seeds.partition("-")
    return int(last or first) - int(first) + 1


# -- the processes of a run ------------------------------------------------------------------------------
def descendants(root: int = 0) -> list:
    """Pids of every living process below ``root`` (default this one, the subreaper of the cluster's orphans)."""
    parents = {}
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            text = read(stat)
            pid, rest = int(text.split(" ", 1)[0]), text.rsplit(")", 1)[1].split()
            if rest[0] != "Z":
                parents[pid] = int(rest[1])
        except (ValueError, IndexError):
            continue
    found, frontier = [], [root or os.getpid()]
    while frontier:
        parent = frontier.pop()
        children = [p for p, pp in parents.items() if pp == parent]
        found += children
        frontier += children
    return found


def held_by(node) -> list:
    """The seeds or trials training on ``node``: the run directories its processes hold files open in."""
    names = set()
    for pid in descendants(node.all_processes["raylet"][0].process.pid):
        for fd in glob.glob(f"/proc/{pid}/fd/*"):
            try:
                names.update(re.findall(r"/((?:seed|trial)-\d+)/", os.readlink(fd)))
            except OSError:
                continue
    return sorted(names)


def reap() -> None:
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                return
        except ChildProcessError:
            return


def strays(grace: float = 20.0) -> int:
    """Processes still alive ``grace`` s after the cluster's shutdown: counted, then killed."""
    deadline = time.monotonic() + grace
    while descendants() and time.monotonic() < deadline:
        reap()
        time.sleep(0.5)
    left = descendants()
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    time.sleep(0.5)
    reap()
    return len(left)


# -- one run ----------------------------------------------------------------------------------------------
def remove_later(cluster, kind: str, root: str, rng: random.Random, args, sweep, out: dict) -> None:
    """(A thread) remove a random worker node a random moment after the first checkpoint of the sweep."""
    victim, delay = rng.randrange(2), rng.uniform(0.0, args.kill_window)
    out.update(victim=victim, delay=delay)
    while sweep.poll() is None and not any(checkpoint_steps(d) for d in run_dirs(kind, root)):
        time.sleep(0.2)
    end = time.monotonic() + delay
    while sweep.poll() is None and time.monotonic() < end:
        time.sleep(0.1)
    if sweep.poll() is not None:
        return  # the sweep ended first: no kill (the run is not counted as a chaos run)
    node = out["workers"][victim]
    out["at_kill"] = {os.path.basename(d): checkpoint_steps(d) for d in run_dirs(kind, root)}
    out["killed_after"] = time.monotonic() - out["start"]
    out["held"] = held_by(node)
    cluster.remove_node(node)  # SIGKILL to the node's processes
    if args.replace:
        cluster.add_node(num_cpus=1)


def chaos_run(index: int, args) -> dict:
    kind = args.sweep if args.sweep != "both" else ("seeds" if index % 2 == 0 else "tune")
    rng = random.Random(args.seed + index)
    out = {"kind": kind, "failure": "", "start": time.monotonic()}
    work = tempfile.mkdtemp(prefix="sweep-chaos-")
    root, cluster, sweep = os.path.join(work, kind), None, None
    try:
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "_system_config": LOCAL_SYSTEM_CONFIG})
        out["workers"] = [cluster.add_node(num_cpus=1) for _ in range(2)]
        cluster.wait_for_nodes()
        log = open(os.path.join(work, "sweep.out"), "w")
        sweep = subprocess.Popen([sys.executable, "-m", "rlengine.cli", *sweep_command(kind, root, cluster.address, args)],
                                 stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                 env={**os.environ, "PYTHONUNBUFFERED": "1"})
        killer = threading.Thread(target=remove_later, args=(cluster, kind, root, rng, args, sweep, out), daemon=True)
        killer.start()
        try:
            out["status"] = sweep.wait(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(sweep.pid, signal.SIGKILL)
            sweep.wait()
            out["failure"] = f"the sweep did not end within --timeout {args.timeout:g} s"
        killer.join(60)
        log.close()
        out["seconds"] = time.monotonic() - out["start"]
        text = read(os.path.join(work, "sweep.out"))
        out["tail"] = text.strip().splitlines()[-3:]
        out["errors"] = sorted(set(re.findall(r"^(?:RuntimeError|rlengine: error): (.*)$", text, re.M)))
        check(kind, root, args, out)
    except Exception as exc:  # the run did not finish: say why, go on with the next
        out["failure"] = out["failure"] or f"{type(exc).__name__}: {exc}"
    finally:
        if sweep is not None and sweep.poll() is None:
            os.killpg(sweep.pid, signal.SIGKILL)
            sweep.wait()
        if cluster is not None:
            cluster.shutdown()
        out["strays"] = strays()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            out["work"] = work
    return out


def check(kind: str, root: str, args, out: dict) -> None:
    """Counts of the run: finished, duplicated (trained twice from scratch, or a run dir too many), lost."""
    dirs = run_dirs(kind, root)
    out["lives"] = {os.path.basename(d): lives(kind, d) for d in dirs}
    full = [d for d in dirs if checkpoint_steps(d) >= args.env_steps]
    out["lost"] = wanted(kind, args) - len(full)
    at_kill = out.get("at_kill", {})
    # a life that starts at iteration 1 trains from scratch; a second one is a duplicate, unless the run had
    # no checkpoint yet when its node went (then starting over is all it can do: counted apart)
    again = {name: sum(first == 1 for first in firsts) - 1 for name, firsts in out["lives"].items() if firsts}
    out["fresh_restarts"] = sum(n for name, n in again.items() if n > 0 and at_kill.get(name, 1) == 0)
    out["duplicated"] = max(0, len(dirs) - wanted(kind, args)) + sum(
        n for name, n in again.items() if n > 0 and at_kill.get(name, 1) != 0)
    out["resumed"] = sorted(name for name, firsts in out["lives"].items() if len(firsts) > 1)
    # each seed (trial) on the removed node started again elsewhere: its log names every start (the
    # wall_time of its metrics starts again from 0)
    out["not_restarted"] = [name for name in out.get("held", []) if len(out["lives"].get(name, [])) < 2]


def verdict(out: dict) -> str:
    problems = [out["failure"]] if out["failure"] else []
    if out.get("status", 0) != 0:
        problems.append(f"exit status {out['status']}: {' | '.join(out.get('tail', []))}")
    if out.get("lost") or out.get("duplicated"):
        problems.append(f"lost {out.get('lost')}, duplicated {out.get('duplicated')} "
                        f"({' | '.join(out.get('errors', [])) or 'no error printed'})")
    if out.get("not_restarted"):
        problems.append(f"{out['not_restarted']} trained on the removed node but were not started again")
    if out["strays"]:
        problems.append(f"{out['strays']} processes left after the cluster's shutdown")
    if "killed_after" not in out and not problems:
        problems.append("the sweep ended before the kill")
    return "; ".join(problems)


def print_run(index: int, out: dict, problems: str) -> None:
    if "killed_after" in out:
        at = ", ".join(f"{k} {v}" for k, v in sorted(out["at_kill"].items()))
        kill = (f"node {out['victim'] + 1} of 2 (training {', '.join(out['held']) or 'nothing'}) removed "
                f"{out['delay']:.1f} s after the first checkpoint, at "
                f"{out['killed_after']:.0f} s (checkpoints at the kill: {at})")
    else:
        kill = "no node removed"
    lived = "; ".join(f"{k} iterations starting {v}" for k, v in sorted(out.get("lives", {}).items()))
    print(f"run {index:2d} ({out['kind']}): {kill}; {lived}; resumed {out.get('resumed')}, "
          f"duplicated {out.get('duplicated')} (fresh restarts {out.get('fresh_restarts')}), lost {out.get('lost')}, exit {out.get('status')}, strays "
          f"{out['strays']}, {out.get('seconds', 0):.0f} s: {'FAILED: ' + problems if problems else 'finished'}",
          flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0, help="run i draws its node and moment from seed + i")
    parser.add_argument("--sweep", choices=["both", "seeds", "tune"], default="both")
    parser.add_argument("--seeds", default="0-1", help="the seeds of a seeds sweep")
    parser.add_argument("--trials", type=int, default=2, help="the trials of a tune sweep")
    parser.add_argument("--env-steps", type=int, default=12288, help="the budget of each seed and trial")
    parser.add_argument("--kill-window", type=float, default=10.0, help="the kill follows the first checkpoint "
                        "by 0..this many seconds")
    parser.add_argument("--replace", action="store_true", help="add a node in place of the removed one")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds a sweep may take")
    parser.add_argument("--keep", action="store_true", help="keep each run's files (and print where)")
    args = parser.parse_args()
    # stopped (Ctrl-C, SIGTERM; a background job ignores SIGINT): the run's cleanup still removes its cluster
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(128 + number))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # orphans of the cluster come here, to be found and reaped
    results = []
    for i in range(args.runs):
        out = chaos_run(i, args)
        problems = verdict(out)
        print_run(i, out, problems)
        if args.keep:
            print(f"        files in {out['work']}", flush=True)
        results.append((out, problems))
    finished = sum(not problems for _, problems in results)
    print(f"{finished}/{args.runs} finished, duplicated {sum(o.get('duplicated') or 0 for o, _ in results)}, "
          f"lost {sum(o.get('lost') or 0 for o, _ in results)}, nodes removed "
          f"{sum('killed_after' in o for o, _ in results)}, strays {sum(o['strays'] for o, _ in results)}")


if __name__ == "__main__":
    main()
