"""Collection speed of a graph environment against the same task through Gymnasium, side by side.

For each number of copies (default 8, 64 and 1,024) it builds the default run (PPO's policy, its
value head, the experience arrays; unrolls of 32 steps) twice: on ``CartPole-v1`` through the
Gymnasium plugin (``SyncVectorEnv``, a ``tf.numpy_function`` per batch step) and on
``tf/CartPole-v1`` (the same dynamics in TensorFlow, stepped inside the collection graph). Trials
alternate between the two; each lasts about ``--seconds``; the best trial of each is printed, with
the ratio. It also prints the graph environment's whole PPO iteration (collection, advantages,
every epoch's minibatches: one graph call) in env steps per second. ``--jit-compile-unroll``
compiles the graph environment's unroll with XLA (``train.jit_compile_unroll``).

Targets (issue "Environments at graph speed"): at 8 copies at least 8x the Gymnasium path's
collection; at 1,024 copies at least 2M env steps/s.

    python benchmarks/graph_env_throughput.py [--copies 8 64 1024] [--trials 3] [--seconds 2] [--jit-compile-unroll]
"""

import argparse
import tempfile
import time

from rlengine.config import DEFAULT_CONFIG, apply_overrides, build_config, read_toml
from rlengine.plugin.manager import build_plugins
from rlengine.run.build import build_components, config_classes

UNROLL = 32
ENVS = ("CartPole-v1", "tf/CartPole-v1")


def components_for(plugins, env: str, copies: int, jit_compile_unroll: bool):
    raw = apply_overrides(read_toml(DEFAULT_CONFIG), [f"train.env={env!r}", f"train.num_envs={copies}",
                                                      f"train.unroll_length={UNROLL}", "train.writers=[]",
                                                      "train.eval_interval=0", 'gym.vectorization="sync"',
                                                      f"train.jit_compile_unroll={str(jit_compile_unroll).lower()}"])
    return build_components(build_config(raw, config_classes(plugins)), plugins, tempfile.mkdtemp())


def timed(step, carry, batch: int, seconds: float) -> tuple[float, object]:
    """Env steps per second of ``carry = step(carry)`` called for about ``seconds``; and the last carry."""
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds or calls < 2:
        carry = step(carry)
        calls += 1
    return calls * UNROLL * batch / (time.perf_counter() - start), carry


def collection(components, seconds: float, carry=None) -> tuple[float, object]:
    collector = components.pipeline.collector
    carry = collector.start() if carry is None else carry
    return timed(lambda c: collector.run(c)[1], carry, collector.batch, seconds)


def whole_iteration(components, seconds: float) -> float:
    pipeline = components.pipeline
    pipeline.start()
    pipeline.iterate(0)  # traces
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds or calls < 2:
        pipeline.iterate(0)
        calls += 1
    return calls * UNROLL * pipeline.collector.batch / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--copies", type=int, nargs="+", default=[8, 64, 1024])
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--jit-compile-unroll", action="store_true", help="the graph environment's unroll by XLA")
    args = parser.parse_args()
    plugins = build_plugins()
    if "tf/CartPole-v1" not in plugins.registries.graph_environments:
        raise SystemExit("tf/CartPole-v1 is not registered: pip install -e plugins/tfenvs")
    for copies in args.copies:
        parts = {env: components_for(plugins, env, copies, args.jit_compile_unroll) for env in ENVS}
        best, carries = dict.fromkeys(ENVS, 0.0), dict.fromkeys(ENVS)
        for env in ENVS:  # trace and warm up
            _, carries[env] = collection(parts[env], 0.0)
        for _ in range(args.trials):
            for env in ENVS:
                rate, carries[env] = collection(parts[env], args.seconds, carries[env])
                best[env] = max(best[env], rate)
        iteration = whole_iteration(parts["tf/CartPole-v1"], args.seconds)
        gym, graph = best["CartPole-v1"], best["tf/CartPole-v1"]
        jit = " (XLA)" if args.jit_compile_unroll else ""
        print(f"{copies:5d} copies{jit}: collection CartPole-v1 (Gymnasium) {gym:12,.0f} env steps/s; tf/CartPole-v1 "
              f"{graph:12,.0f} ({graph / gym:5.1f}x); tf/CartPole-v1 whole PPO iteration {iteration:12,.0f}",
              flush=True)
        for components in parts.values():
            components.close()


if __name__ == "__main__":
    main()
