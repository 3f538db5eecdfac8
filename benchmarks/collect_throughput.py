"""Collection speed of the PPO MLP policy against raw Gymnasium stepping.

Side by side in one run: CartPole-v1 with N copies (default 64) stepped by
`gymnasium.make_vec(..., "sync")` with random actions, and the engine's
synchronous pipeline's collector with the default PPO policy (sampling,
value head, transformers, the experience arrays). Target: the collector keeps
at least 70% of raw stepping at 64 copies, 40% at 8. Trials alternate; the best
of each is shown.

``--split`` also prints where a batch step of the collector goes: the whole
step; the graph's side alone (the same loop, callback and packing included,
over an environment that answers at once with a time step it saved); the
environment's Python alone (the guarded env's step, in a tight Python loop);
and what is left: what the two cost together beyond their costs apart (most
likely each evicting the other's code and data from the caches).

    python benchmarks/collect_throughput.py [--num-envs 64] [--unrolls 40] [--trials 3] [--split]
"""

import argparse
import tempfile
import time

import gymnasium
import numpy as np
import tensorflow as tf

from rlengine import Environment
from rlengine.config import DEFAULT_CONFIG, apply_overrides, build_config, read_toml
from rlengine.pipelines.sync.collector import Collector
from rlengine.plugin.manager import build_plugins
from rlengine.run.build import build_components, config_classes

UNROLL = 32
ACTION_POOL = 64  # random actions drawn up front and cycled, so the timed loop draws none


def raw_steps_per_sec(num_envs: int, steps: int) -> float:
    venv = gymnasium.make_vec("CartPole-v1", num_envs, vectorization_mode="sync")
    venv.reset(seed=0)
    actions = np.random.randint(0, 2, size=(steps, num_envs))
    start = time.perf_counter()
    for action in actions:
        venv.step(action)
    elapsed = time.perf_counter() - start
    venv.close()
    return steps * num_envs / elapsed


def collection_config(plugins, num_envs: int):
    """The default config (PPO on CartPole-v1) with ``num_envs`` copies, unrolls of ``UNROLL``, no writers."""
    raw = apply_overrides(read_toml(DEFAULT_CONFIG), [f"train.num_envs={num_envs}", f"train.unroll_length={UNROLL}",
                                                      "train.writers=[]"])
    return build_config(raw, config_classes(plugins))


def driver_steps_per_sec(components, unrolls: int, driver=None) -> float:
    driver = driver or components.pipeline.collector
    carry = driver.start()
    for _ in range(2):  # trace and warm up
        _, carry = driver.run(carry)
    start = time.perf_counter()
    for _ in range(unrolls):
        experience, carry = driver.run(carry)
    experience.step_type.numpy()
    elapsed = time.perf_counter() - start
    return unrolls * UNROLL * driver.batch / elapsed


class SavedAnswer(Environment):
    """``env``'s answer to the first step, returned again for every later one: an environment that costs nothing."""

    # The guarded env checked this answer when it gave it. Without the flag ``EnvCaller`` would check it again on
    # every step and the graph side would count a second check; the whole step checks once, in the guard, which is
    # timed on the env side. With it, ``EnvCaller`` takes the checked leaves (``step_leaves``), as from the guard.
    checks_outputs = True

    def __init__(self, env: Environment):
        super().__init__(env.env_id, env.num_envs, env.seed, env.first_env_id, env.config)
        self.env, self.answer = env, None

    def time_step_spec(self):
        return self.env.time_step_spec()

    def action_spec(self):
        return self.env.action_spec()

    def reset(self):
        return self.env.reset()

    def step(self, action):
        return tf.nest.pack_sequence_as(self.time_step_spec(), self.step_leaves(action))

    def reset_leaves(self):
        return self.env.reset_leaves()

    def step_leaves(self, action):
        if self.answer is None:
            self.answer = self.env.step_leaves(action)
        return self.answer


def env_python_seconds(components, steps: int) -> float:
    """Seconds per batch step of the guarded env's ``step``, in a tight loop (the graph side has the packing).

    The actions are drawn for one bounded scalar discrete action per copy, as CartPole's (the default config's env).
    """
    caller = components.pipeline.collector.env
    spec = caller.action_spec
    actions = [np.random.randint(spec.minimum, spec.maximum + 1, size=caller.batch).astype(spec.dtype.as_numpy_dtype)
               for _ in range(ACTION_POOL)]
    caller.env.reset()
    start = time.perf_counter()
    for i in range(steps):
        caller.env.step(actions[i % ACTION_POOL])
    return (time.perf_counter() - start) / steps


def print_split(components, num_envs: int, unrolls: int, trials: int) -> None:
    """Microseconds per batch step: whole, graph side, env Python alone, and the rest (best of ``trials``)."""
    pipe = components.pipeline.collector
    graph_side = Collector(SavedAnswer(pipe.env.env), pipe.chain, pipe.algorithm, pipe.specs, pipe.converters,
                           pipe.unroll_length)
    whole_s, graph_s, env_s = [], [], []
    for _ in range(trials):
        whole_s.append(num_envs / driver_steps_per_sec(components, unrolls))
        graph_s.append(num_envs / driver_steps_per_sec(components, unrolls, graph_side))
        env_s.append(env_python_seconds(components, unrolls * UNROLL))
    w, g, e = (min(x) * 1e6 for x in (whole_s, graph_s, env_s))
    print(f"per batch step of {num_envs} copies: whole {w:.0f} us = graph side {g:.0f} (an env that answers at once) "
          f"+ env Python {e:.0f} (alone, in a tight loop) + {w - g - e:.0f} (what the two cost together, beyond apart)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--num-envs", type=int, default=64)
    parser.add_argument("--unrolls", type=int, default=40)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--split", action="store_true", help="also print where a batch step goes")
    args = parser.parse_args()
    plugins = build_plugins()
    components = build_components(collection_config(plugins, args.num_envs), plugins, tempfile.mkdtemp())
    raw_best, driver_best = 0.0, 0.0
    for _ in range(args.trials):
        raw_best = max(raw_best, raw_steps_per_sec(args.num_envs, args.unrolls * UNROLL))
        driver_best = max(driver_best, driver_steps_per_sec(components, args.unrolls))
    print(f"CartPole-v1, {args.num_envs} copies: raw gymnasium (random actions) {raw_best:,.0f} steps/s; "
          f"rlengine PPO collection {driver_best:,.0f} steps/s; ratio {driver_best / raw_best:.0%} "
          f"(target >= {'70%' if args.num_envs >= 64 else '40%'})", flush=True)
    if args.split:
        print_split(components, args.num_envs, args.unrolls, args.trials)
    components.close()


if __name__ == "__main__":
    main()
