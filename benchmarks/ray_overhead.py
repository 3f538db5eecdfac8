"""What the ray pipeline pays for shipping unrolls and weights, and whole PPO iterations against the sync pipeline.

1. Per unroll and per weight broadcast, for PPO's MLP on CartPole-v1
   (``examples/ppo_cartpole_ray.toml``: runners of 4 copies, unroll 32) and
   SAC's 2x256 nets on Pendulum-v1 (``examples/sac_pendulum.toml`` on the ray
   pipeline, 1 runner of its 1 copy, unroll 4); runner 0 is called directly:
   * unroll bytes: its experience arrays' nbytes, and the Unroll pickled
     (what the runner sends back);
   * unroll seconds: the sample round trip (``ray.get(sample.remote(...))``
     with the version the runner already holds) minus ``Unroll.seconds``,
     its collecting inside the actor: the request, scheduling, the unroll's
     transfer and unpickling;
   * weights bytes: the dict ``RayPipeline._publish`` puts (acting variables
     and transformer statistics), nbytes and pickled;
   * weights seconds: ``ray.put`` of that dict (``RunnerFleet.publish``), and
     the runner's load of a new version (its ``Unroll.seconds`` with a new
     version minus that of the sample before, with the version it held:
     fetch and assign; below about 1 ms this is within the noise of collecting).
   Every seconds figure is the median of ``--samples``.
2. PPO on CartPole-v1 (a fast env: collection costs little, the transfers
   show), example settings: ``examples/ppo_cartpole_ray.toml`` (2 runners x
   4 copies) against ``examples/ppo_cartpole.toml`` (sync, 8 copies); env
   steps/s of ``--iterations`` whole training iterations after ``--warmup``.
   Target: ray >= 50% of sync.

One local Ray (2 logical CPUs) is started here for every figure.

    python benchmarks/ray_overhead.py [--samples 20] [--iterations 30] [--warmup 3] [--skip-training]
"""

import argparse
import os
import pickle
import statistics
import tempfile
import time

import ray
from rlengine_ray.cluster import start_local_ray

from rlengine.plugin.manager import build_plugins
from rlengine.run.build import build_components
from rlengine.run.engine import Engine

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples")
CASES = {"PPO MLP, CartPole-v1": ("ppo_cartpole_ray.toml", []),
         "SAC 2x256, Pendulum-v1": ("sac_pendulum.toml",
                                    ['train.pipeline="ray"', "ray.num_runners=1", "ray.num_cpus_per_runner=1",
                                     "sac.replay_capacity=10000"])}  # a smaller buffer: it ships nothing


def components_of(plugins, toml: str, overrides: list):
    engine = Engine(os.path.join(EXAMPLES, toml), ["train.writers=[]", *overrides], plugins=plugins)
    return build_components(engine.config, engine.plugins, tempfile.mkdtemp(), writers=False)


def sizes(value) -> tuple:
    """(nbytes of the numpy arrays in it, pickled bytes) of an unroll's experience or a weights dict."""
    arrays = value.experience if hasattr(value, "experience") else value["algorithm"]
    return sum(a.nbytes for a in arrays), len(pickle.dumps(value, protocol=5))


def bytes_by_module(algorithm, published: int) -> dict:
    """Bytes of each network of the algorithm (its ``tf.Module`` attributes; lists of them, such as a list of
    (optimizer, variables), are left out) and the rest of the ``published`` bytes: what the broadcast holds."""
    out: dict = {}
    for name, value in sorted(vars(algorithm).items()):
        if hasattr(value, "name_scope") and hasattr(value, "variables") and not hasattr(value, "apply_gradients"):
            out[name] = sum(v.shape.num_elements() * v.dtype.size for v in value.variables)
    out["other"] = published - sum(out.values())
    return out


def sample(actor, weights_ref, version: int):
    """One unroll straight from the actor (no fleet), and the seconds of its round trip."""
    start = time.perf_counter()
    unroll = ray.get(actor.sample.remote(0, [weights_ref], version, False))
    return unroll, time.perf_counter() - start


def transfer_costs(plugins, toml: str, overrides: list, samples: int) -> dict:
    components = components_of(plugins, toml, overrides)
    try:
        pipeline = components.pipeline
        pipeline.start()  # runners built and weights published; nothing is requested until iterate
        actor, ref = pipeline.fleet.actors[0], pipeline.fleet.weights
        values = ray.get(ref)
        for _ in range(2):  # its collector traced
            unroll, _ = sample(actor, ref, 0)
        held, loads, version = [], [], 0
        for _ in range(samples):  # in pairs, so a drift of the machine's load cancels out of the difference
            held.append(sample(actor, ref, version))  # the version it holds: no load
            version += 1
            fresh, _ = sample(actor, ref, version)  # a version it has not acted with: fetches and assigns
            loads.append(fresh.seconds - held[-1][0].seconds)
        puts = []
        for _ in range(samples):
            start = time.perf_counter()
            ray.put(values)
            puts.append(time.perf_counter() - start)
        return {"unroll": sizes(unroll), "weights": sizes(values),
                "by_module": bytes_by_module(components.algorithm, sizes(values)[0]),
                "round_trip": statistics.median(seconds - u.seconds for u, seconds in held),
                "collect": statistics.median(u.seconds for u, _ in held),
                "put": statistics.median(puts),
                "load": statistics.median(loads)}
    finally:
        components.close()


def print_costs(name: str, c: dict) -> None:
    unroll_arrays, unroll_pickled = c["unroll"]
    weight_arrays, weight_pickled = c["weights"]
    print(f"{name}: unroll {unroll_arrays:,} B arrays, {unroll_pickled:,} B pickled; round trip minus collecting "
          f"{c['round_trip'] * 1e3:.2f} ms (collecting {c['collect'] * 1e3:.1f} ms)")
    print(f"{name}: weights {weight_arrays:,} B arrays, {weight_pickled:,} B pickled; ray.put "
          f"{c['put'] * 1e3:.2f} ms; runner load of a new version {c['load'] * 1e3:.2f} ms")
    print(f"{name}: weights by module: " + ", ".join(f"{m} {b:,} B" for m, b in c["by_module"].items()))


def iteration_rate(plugins, toml: str, warmup: int, iterations: int) -> float:
    """Env steps/s of whole training iterations (collect and train) after ``warmup``."""
    components = components_of(plugins, toml, [])
    try:
        pipeline, train = components.pipeline, components.pipeline.context.config.train
        per_iteration = train.num_envs * train.unroll_length
        pipeline.start()
        env_steps = 0
        for _ in range(warmup):
            env_steps += pipeline.iterate(env_steps).env_steps or per_iteration  # 0: unroll_length x num_envs
        start, steps = time.perf_counter(), 0
        for _ in range(iterations):
            steps += pipeline.iterate(env_steps + steps).env_steps or per_iteration
        return steps / (time.perf_counter() - start)
    finally:
        components.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=20, help="calls per seconds figure (median)")
    parser.add_argument("--iterations", type=int, default=30, help="timed training iterations per pipeline")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--skip-training", action="store_true", help="only the per-unroll and per-weights figures")
    args = parser.parse_args()
    plugins = build_plugins()
    start_local_ray(2)
    try:
        for name, (toml, overrides) in CASES.items():
            print_costs(name, transfer_costs(plugins, toml, overrides, args.samples))
        if not args.skip_training:
            ray_rate = iteration_rate(plugins, "ppo_cartpole_ray.toml", args.warmup, args.iterations)
            sync_rate = iteration_rate(plugins, "ppo_cartpole.toml", args.warmup, args.iterations)
            print(f"PPO CartPole-v1 training iterations: ray 2 runners x 4 copies {ray_rate:,.0f} steps/s; sync "
                  f"8 copies {sync_rate:,.0f} steps/s; ray {ray_rate / sync_rate:.0%} of sync (target >= 50%)")
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
