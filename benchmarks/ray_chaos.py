"""Chaos: short training runs of the ray pipeline, each with one runner process killed at a random moment.

``--runs`` runs (default 20), each its own run built as a run is built
(``build_components``, ``pipeline.start``, ``iterate``, ``close``): the
ray testing kit's ``probe`` policy (``--algorithm probe-q``: off-policy,
through the replay) on its ``chaos`` env with no fault set, 2 runners x 2
copies, unroll 8. In run i (``random.Random(seed + i)``) a random runner
is sent SIGKILL (its pid from ``fleet.descriptions``) a random 0-0.3 s
after a random iteration in 1..``--kill-window``, from a timer thread, so the
kill lands wherever the driver is (waiting on Ray, training, publishing).
The run then iterates until it has ``--iterations`` iterations and the
killed runner's new life has delivered ``--after`` unrolls.

A run is finished when it raised nothing and the killed runner came back
within ``--deadline`` seconds of the kill. Checked in each run:
``fleet.restarts`` is 1 for the killed runner and 0 for the others, the last
iteration's ``ray/runner_restarts`` agrees, ``fleet.duplicates == 0``, and
within each runner life the unrolls received (``pipeline._receive``
wrapped, as ``plugins/ray/tests/test_faults.py`` does) have sequence numbers
0, 1, 2, ...: none twice, none skipped. Target: N/N finished, restarts
counted N, duplicated 0, skipped 0. One local Ray is started here for all runs.

    python benchmarks/ray_chaos.py [--runs 20] [--seed 0] [--algorithm probe] [--iterations 40]
                                   [--kill-window 20] [--after 3] [--deadline 120]
"""

import argparse
import os
import random
import signal
import tempfile
import threading
import time

import ray
from rlengine_ray.cluster import start_local_ray

from rlengine.errors import one_line
from rlengine.plugin.manager import build_plugins
from rlengine.run.build import build_components
from rlengine.run.engine import Engine
from rlengine.testing.kit import testing_plugin, tiny_config

RUNNERS = 2


def components_for(plugins, algorithm: str):
    raw = tiny_config(tempfile.mkdtemp(), pipeline="ray", algorithm=algorithm, env="chaos", num_envs=2 * RUNNERS,
                      unroll_length=8, eval_interval=0, writers=[])
    raw["ray"] = {"num_runners": RUNNERS, "num_cpus_per_runner": 1, "start_timeout": 120.0}
    engine = Engine(raw, plugins=plugins)
    return build_components(engine.config, engine.plugins, raw["train"]["root_dir"], writers=False)


def kill_later(pid: int, delay: float) -> threading.Timer:
    def kill() -> None:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:  # gone already: the run's checks will show it did not restart once
            pass

    timer = threading.Timer(delay, kill)
    timer.start()
    return timer


def sequence_faults(received: list) -> tuple:
    """(duplicated, skipped) unrolls over every runner life: each life must deliver 0, 1, 2, ... in order."""
    duplicated = skipped = 0
    for life in {u.incarnation for u in received}:
        sequences = [u.sequence for u in received if u.incarnation == life]
        duplicated += len(sequences) - len(set(sequences))
        skipped += max(sequences) + 1 - len(set(sequences))
        if sequences != sorted(sequences):
            skipped += 1  # out of order counts as a gap: the replay's rows would not follow on
    return duplicated, skipped


def chaos_run(plugins, index: int, args) -> dict:
    """One run with one kill; what it saw, and why it did not finish (``failure``), if it did not."""
    rng = random.Random(args.seed + index)
    victim, kill_after, delay = rng.randrange(RUNNERS), rng.randint(1, args.kill_window), rng.uniform(0.0, 0.3)
    out = {"victim": victim, "kill_after": kill_after, "delay": delay, "failure": "", "iterations": 0}
    received, components, timer = [], components_for(plugins, args.algorithm), None
    pipeline = components.pipeline
    original = pipeline._receive
    pipeline._receive = lambda: received.append(original()) or received[-1]  # every unroll handed to the learner
    try:
        pipeline.start()
        env_steps, killed_at, iteration = 0, None, None
        while not back(received, victim, args.after) or out["iterations"] < args.iterations:
            if killed_at is not None and time.monotonic() - killed_at > args.deadline:
                raise TimeoutError(f"runner {victim} not back within {args.deadline:g} s of the kill")
            iteration = pipeline.iterate(env_steps)
            env_steps, out["iterations"] = env_steps + iteration.env_steps, out["iterations"] + 1
            if out["iterations"] == kill_after:
                out["pid"] = pipeline.fleet.descriptions[victim]["pid"]
                timer, killed_at = kill_later(out["pid"], delay), time.monotonic()
        if killed_at is None:
            raise RuntimeError(f"runner {victim} restarted before it was killed")
        out["seconds_after_kill"] = time.monotonic() - killed_at
        out["metric_restarts"] = iteration.metrics["ray/runner_restarts"]
    except Exception as exc:  # the run did not finish: say why, go on with the next
        out["failure"] = one_line(exc)
    finally:
        if timer is not None:
            timer.join()
        out["restarts"], out["fleet_duplicates"] = list(pipeline.fleet.restarts), pipeline.fleet.duplicates
        out["duplicated"], out["skipped"] = sequence_faults(received) if received else (0, 0)
        components.close()
    return out


def back(received: list, runner: int, unrolls: int) -> bool:
    """Whether ``runner``'s second life has delivered ``unrolls`` unrolls."""
    lives: dict = {}
    for u in received:
        if u.runner == runner:
            lives[u.incarnation] = lives.get(u.incarnation, 0) + 1
    return len(lives) >= 2 and list(lives.values())[-1] >= unrolls


def verdict(out: dict) -> str:
    expected = [int(r == out["victim"]) for r in range(RUNNERS)]
    problems = [out["failure"]] if out["failure"] else []
    if out["restarts"] != expected:
        problems.append(f"restarts {out['restarts']}, expected {expected}")
    if not out["failure"] and out["metric_restarts"] != sum(expected):
        problems.append(f"ray/runner_restarts = {out['metric_restarts']:g}")
    if out["fleet_duplicates"] or out["duplicated"] or out["skipped"]:
        problems.append("unrolls duplicated or skipped")
    return "; ".join(problems)


def print_run(index: int, out: dict, problems: str) -> None:
    timing = f", back {out['seconds_after_kill']:.1f} s after it" if "seconds_after_kill" in out else ""
    print(f"run {index:2d}: runner {out['victim']} (pid {out.get('pid', '?')}) killed {out['delay']:.2f} s after "
          f"iteration {out['kill_after']}{timing}; {out['iterations']} iterations, restarts {out['restarts']}, "
          f"duplicated {out['duplicated'] + out['fleet_duplicates']}, skipped {out['skipped']}: "
          f"{'FAILED: ' + problems if problems else 'finished'}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0, help="run i draws its runner and moment from seed + i")
    parser.add_argument("--algorithm", choices=["probe", "probe-q"], default="probe")
    parser.add_argument("--iterations", type=int, default=40, help="iterations each run makes at least")
    parser.add_argument("--kill-window", type=int, default=20, help="the kill follows iteration 1..this")
    parser.add_argument("--after", type=int, default=3, help="unrolls the restarted runner must deliver")
    parser.add_argument("--deadline", type=float, default=120.0, help="seconds for the killed runner to come back")
    args = parser.parse_args()
    import rlengine_ray.testing  # here, after rlengine started TensorFlow quietly: the kit imports it bare

    plugins = build_plugins(extra_plugins=[("testing", testing_plugin()), ("ray-testing", rlengine_ray.testing)])
    start_local_ray(RUNNERS)
    results = []
    try:
        for i in range(args.runs):
            out = chaos_run(plugins, i, args)
            problems = verdict(out)
            print_run(i, out, problems)
            results.append((out, problems))
    finally:
        ray.shutdown()
    finished = sum(not problems for _, problems in results)
    print(f"{finished}/{args.runs} finished, restarts counted {sum(sum(o['restarts']) for o, _ in results)} "
          f"(expected {args.runs}), duplicated {sum(o['duplicated'] + o['fleet_duplicates'] for o, _ in results)}, "
          f"skipped {sum(o['skipped'] for o, _ in results)}")


if __name__ == "__main__":
    main()
