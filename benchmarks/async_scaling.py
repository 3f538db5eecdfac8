"""The asynchronous pipeline against the synchronous driver, measured side by side in one run.

1. Collection: ``rlengine/SlowCartPole-v1`` (each step sleeps 2 ms, like a
   simulator or a remote environment that answers slowly without using the
   CPU), PPO's MLP policy acting, 16 copies in total. The sync driver steps
   all 16 as one batch; the async pipeline runs 4 env threads of 4 copies
   (1 actor thread). Env steps per second are counted from the collected
   unrolls only (no training), for two ways a batch steps its copies:
   * in-process copies (``[gym] vectorization = "sync"``): a batch takes
     copies x 2 ms, as a simulator stepping its batch serially does;
   * a process per copy (``vectorization = "async"``): a batch takes about
     2 ms whatever its size, so the sync driver already overlaps the
     latencies; the bound for both is copies / 2 ms.
   Each figure is measured in a fresh process: TensorFlow's inter-op pool is
   sized for the driver when the run is built (see rlengine/run/process/runtime.py).
   Target: 4 env threads collect at least 3x the sync driver's steps/s.
2. SAC on Pendulum-v1 to -200 (``examples/sac_pendulum.toml``), sync and
   async with one env thread (the learner trains while the next unroll is
   collected), the env thread asking an actor thread or acting itself
   (``async.num_actor_threads = 0``); each seed in a fresh process; training
   seconds at the first evaluation >= -200. Target: async no slower than sync.

    python benchmarks/async_scaling.py [--seconds 10] [--seeds 3] [--skip-learning]
"""

import argparse
import statistics
import subprocess
import sys
import tempfile
import time

from runs import first_reaching, train_in_fresh_process

from rlengine.config import build_config
from rlengine.plugin.manager import build_plugins
from rlengine.run.build import build_components, config_classes

NUM_ENVS, THREADS, UNROLL, LATENCY = 16, 4, 32, 0.002


def components_for(plugins, driver: str, vectorization: str):
    raw = {"train": {"algorithm": "ppo", "env": "rlengine/SlowCartPole-v1", "num_envs": NUM_ENVS,
                     "unroll_length": UNROLL, "writers": [], "pipeline": driver},
           "gym": {"vectorization": vectorization, "make_kwargs": {"latency": LATENCY}},
           "async": {"num_env_threads": THREADS, "num_actor_threads": 1}}
    return build_components(build_config(raw, config_classes(plugins)), plugins, tempfile.mkdtemp())


def sync_rate(parts, seconds: float) -> float:
    driver = parts.pipeline.collector
    carry = driver.start()
    for _ in range(2):  # trace and warm up
        _, carry = driver.run(carry)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        experience, carry = driver.run(carry)
        steps += UNROLL * driver.batch
    experience.step_type.numpy()
    return steps / (time.perf_counter() - start)


def async_rate(parts, seconds: float) -> float:
    pipeline = parts.pipeline
    pipeline.start()
    try:
        for _ in range(2 * THREADS):  # every thread traced and running
            pipeline._next_unroll()
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            unroll = pipeline._next_unroll()
            steps += UNROLL * pipeline.envs[int(unroll.thread)].batch_size
        return steps / (time.perf_counter() - start)
    finally:
        pipeline.stop()


def measure(driver: str, vectorization: str, seconds: float) -> float:
    """Steps/s of one driver; run in a fresh process, whose TensorFlow runtime is sized for that driver."""
    parts = components_for(build_plugins(), driver, vectorization)
    try:
        return (sync_rate if driver == "sync" else async_rate)(parts, seconds)
    finally:
        parts.close()


def measure_in_fresh_process(driver: str, vectorization: str, seconds: float) -> float:
    out = subprocess.run([sys.executable, __file__, "--measure", driver, vectorization, "--seconds", str(seconds)],
                         check=True, capture_output=True, text=True).stdout
    return float(out.strip().splitlines()[-1])


def collection(seconds: float) -> None:
    for vectorization, what in (("sync", "in-process copies"), ("async", "a process per copy")):
        rates = {d: measure_in_fresh_process(d, vectorization, seconds) for d in ("sync", "async")}
        bound = NUM_ENVS / LATENCY
        print(f"collection, {NUM_ENVS} copies, {what}: sync driver {rates['sync']:,.0f} steps/s; "
              f"async {THREADS} env threads {rates['async']:,.0f} steps/s; ratio {rates['async'] / rates['sync']:.2f}x "
              f"(target >= 3x; latency bound {bound:,.0f} steps/s)")


def sac_to_200(seeds: int) -> None:
    results = {}
    variants = (("sync", []),
                ("async, 1 actor thread", ['train.pipeline="async"', "async.num_env_threads=1"]),
                ("async, env thread acts", ['train.pipeline="async"', "async.num_env_threads=1",
                                            "async.num_actor_threads=0"]))
    for name, overrides in variants:
        times = []
        for seed in range(seeds):
            _, _, _, history = train_in_fresh_process("examples/sac_pendulum.toml", seed, *overrides)
            hit = first_reaching(history, -200.0)
            print(f"SAC Pendulum-v1 {name:22s} seed {seed}: " + (
                f"{hit[2]:.1f} at {hit[0]} env steps, {hit[1]:.1f} s training" if hit else "never reached -200"))
            times.append(hit[1] if hit else float("inf"))
        results[name] = statistics.median(times)
    for name, median in results.items():
        print(f"SAC to -200, median training seconds, {name}: {median:.1f}"
              + ("" if name == "sync" else f" (ratio to sync {median / results['sync']:.2f}; target <= 1)"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=10.0, help="measuring time per collection figure")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--skip-learning", action="store_true")
    parser.add_argument("--measure", nargs=2, metavar=("DRIVER", "VECTORIZATION"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:  # one figure, in this (fresh) process
        print(measure(*args.measure, args.seconds))
        return
    collection(args.seconds)
    if not args.skip_learning:
        sac_to_200(args.seeds)


if __name__ == "__main__":
    main()
