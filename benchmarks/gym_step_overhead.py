"""Overhead of ``GymEnvironment.step`` over raw Gymnasium vector stepping.

Steps CartPole-v1 with 64 copies and random actions, once through a raw
``gymnasium.make_vec(..., vectorization_mode="sync")`` and once through the
gym plugin's ``GymEnvironment`` (which adds the TimeStep conversion: step
types, float32 rewards and discounts, observation copies, prev_action and
env_id), and prints batched steps per second for both. Trials alternate
between the two and the best of each is reported.

    python benchmarks/gym_step_overhead.py [--num-envs 64] [--steps 2000] [--trials 5]
"""

from __future__ import annotations

import argparse
import time

import gymnasium
import numpy as np
from rlengine_gym.environment import GymEnvironment


def time_raw(env_id: str, num_envs: int, actions: np.ndarray) -> float:
    venv = gymnasium.make_vec(env_id, num_envs, vectorization_mode="sync")
    venv.reset(seed=0)
    step = venv.step
    start = time.perf_counter()
    for action in actions:
        step(action)
    elapsed = time.perf_counter() - start
    venv.close()
    return elapsed


def time_plugin(env_id: str, num_envs: int, actions: np.ndarray) -> float:
    env = GymEnvironment(env_id, num_envs, seed=0, config={"vectorization": "sync"})  # as the raw path
    env.reset()
    step = env.step
    start = time.perf_counter()
    for action in actions:
        step(action)
    elapsed = time.perf_counter() - start
    env.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("--num-envs", type=int, default=64)
    parser.add_argument("--steps", type=int, default=2000, help="batched steps per trial")
    parser.add_argument("--trials", type=int, default=5)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    actions = rng.integers(0, 2, size=(args.steps, args.num_envs)).astype(np.int32)
    time_raw(args.env, args.num_envs, actions[:50])  # warm up both paths
    time_plugin(args.env, args.num_envs, actions[:50])

    raw, plugin = [], []
    for _ in range(args.trials):
        raw.append(time_raw(args.env, args.num_envs, actions))
        plugin.append(time_plugin(args.env, args.num_envs, actions))
    raw_best, plugin_best = min(raw), min(plugin)
    raw_rate, plugin_rate = args.steps / raw_best, args.steps / plugin_best
    overhead_us = (plugin_best - raw_best) / args.steps * 1e6

    print(f"{args.env}, {args.num_envs} copies, {args.steps} batched steps x {args.trials} trials (best)")
    print(f"  raw gymnasium.make_vec(sync): {raw_rate:9.1f} batched steps/s  {raw_rate * args.num_envs:11.0f} env steps/s")
    print(f"  GymEnvironment.step:          {plugin_rate:9.1f} batched steps/s  {plugin_rate * args.num_envs:11.0f} env steps/s")
    print(f"  overhead: {overhead_us:.1f} us per batched step ({(plugin_best / raw_best - 1) * 100:+.1f}%)")


if __name__ == "__main__":
    main()
