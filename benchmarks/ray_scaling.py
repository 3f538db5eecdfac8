"""Collection scaling of the ray pipeline: 1, 2, 4 and 8 env runners against the sync pipeline, in one run.

``rlengine/SlowCartPole-v1`` (each step sleeps 2 ms, like a simulator or a
remote environment that answers slowly without using the CPU), so the
runners can scale past this machine's cores. Each runner steps
``--envs-per-runner`` copies (default 4) in its own process, serially
(``[gym] vectorization = "sync"``: a batched step takes copies x 2 ms); the
sync pipeline steps the same total, runners x envs_per_runner copies, as one
batch in this process. PPO's MLP policy acts; the learner trains every
iteration with ``ppo.num_epochs = 1`` (one pass in mini batches of 256), so
the learner stays cheap and the figures measure collection.

Figures are env steps per second of whole training iterations (collect and
train, counted by ``Iteration.env_steps``), timed over ``--iterations``
after ``--warmup`` iterations; start-up (runner processes importing
TensorFlow, tracing) is left out. One local Ray with max(--runners) logical
CPUs is started here and shared by every configuration (each runner asks for
one); each pipeline is stopped before the next is built.

Targets: scaling efficiency steps/s(n) / (n x steps/s(1)) >= 0.8 up to 4
runners; the ray pipeline >= 3x the sync pipeline at 4 runners.

    python benchmarks/ray_scaling.py [--runners 1 2 4 8] [--envs-per-runner 4] [--iterations 20] [--warmup 3]
"""

import argparse
import tempfile
import time

import ray
from rlengine_ray.cluster import start_local_ray

from rlengine.config import build_config
from rlengine.plugin.manager import build_plugins
from rlengine.run.build import build_components, config_classes

ENV, UNROLL, LATENCY = "rlengine/SlowCartPole-v1", 32, 0.002


def components_for(plugins, pipeline: str, runners: int, envs_per_runner: int):
    """PPO on the slow CartPole with runners x envs_per_runner copies, built as a run builds them."""
    raw = {"train": {"algorithm": "ppo", "env": ENV, "pipeline": pipeline, "num_envs": runners * envs_per_runner,
                     "unroll_length": UNROLL, "eval_interval": 0, "num_eval_episodes": 1, "writers": []},
           "gym": {"vectorization": "sync", "make_kwargs": {"latency": LATENCY}},
           "ppo": {"num_epochs": 1, "mini_batch_size": 256},
           "ray": {"num_runners": runners, "envs_per_runner": envs_per_runner, "num_cpus_per_runner": 1}}
    return build_components(build_config(raw, config_classes(plugins)), plugins, tempfile.mkdtemp(), writers=False)


def steps_per_sec(components, warmup: int, iterations: int) -> float:
    """Env steps/s of ``iterations`` training iterations after ``warmup`` (tracing, runners' first unrolls)."""
    pipeline = components.pipeline
    per_iteration = pipeline.context.config.train.num_envs * UNROLL  # what env_steps = 0 stands for
    pipeline.start()
    env_steps = 0
    for _ in range(warmup):
        env_steps += pipeline.iterate(env_steps).env_steps or per_iteration
    start, steps = time.perf_counter(), 0
    for _ in range(iterations):
        steps += pipeline.iterate(env_steps + steps).env_steps or per_iteration
    return steps / (time.perf_counter() - start)


def measure(plugins, pipeline: str, runners: int, args) -> float:
    components = components_for(plugins, pipeline, runners, args.envs_per_runner)
    try:
        return steps_per_sec(components, args.warmup, args.iterations)
    finally:
        components.close()  # stops the pipeline: its runners are killed, the shared Ray stays up


def print_table(rows: list) -> None:
    print(f"{'runners':>7} {'copies':>6} {'ray steps/s':>12} {'sync steps/s':>13} {'ray/sync':>9} {'vs linear':>10}")
    one_runner = next((ray_rate for n, _, ray_rate, _ in rows if n == 1), None)
    for n, copies, ray_rate, sync_rate in rows:
        efficiency = f"{ray_rate / (n * one_runner):.2f}" if one_runner else "-"
        ratio = ray_rate / sync_rate
        print(f"{n:>7} {copies:>6} {ray_rate:>12,.0f} {sync_rate:>13,.0f} {ratio:>8.2f}x {efficiency:>10}")
    print(f"targets: vs linear >= 0.80 up to 4 runners; ray/sync >= 3x at 4 runners (copies step serially, so the "
          f"bound is about {1 / LATENCY:,.0f} steps/s per runner, and as much for sync whatever its copies)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runners", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--envs-per-runner", type=int, default=4)
    parser.add_argument("--iterations", type=int, default=20, help="timed iterations per configuration")
    parser.add_argument("--warmup", type=int, default=3, help="untimed iterations first")
    args = parser.parse_args()
    plugins = build_plugins()
    # logical CPUs: the runners mostly sleep in their env's steps, so more of them than cores is the point;
    start_local_ray(max(args.runners))
    rows = []
    try:
        for n in args.runners:
            ray_rate = measure(plugins, "ray", n, args)
            sync_rate = measure(plugins, "sync", n, args)
            rows.append((n, n * args.envs_per_runner, ray_rate, sync_rate))
            print(f"{n} runners x {args.envs_per_runner} copies: ray {ray_rate:,.0f} steps/s, "
                  f"sync {sync_rate:,.0f} steps/s", flush=True)
    finally:
        ray.shutdown()
    print_table(rows)


if __name__ == "__main__":
    main()
