"""Multi-agent collection overhead: the engine on a PettingZoo game against the bare Parallel games.

Three measurements of the same game at ``--copies`` copies, in one run, trials alternating (best of each):

* **bare**: ``copies`` Parallel envs made by the game's own module (``mpe2.simple_spread_v3.parallel_env()``),
  stepped one after the other with random actions drawn beforehand, reset when no agent is left:
  what a hand-written loop over PettingZoo costs;
* **engine raw**: the engine's environment of the same game (``PettingZooEnvironment``: every agent of every
  copy a batch row) stepped with random actions, no policy, no tensors;
* **engine collection**: the collector a run builds (the default config: PPO's policy and value head shared
  by every agent, unrolls of 32 steps), through ``tf.numpy_function`` as in training.

Figures are game steps per second (a step of one copy, all its agents acting), so the three compare
directly. Target (issue 46): engine collection at least 60% of bare stepping at 8 copies.

    python benchmarks/multi_agent_overhead.py [--env mpe2/simple_spread_v3] [--copies 8] [--trials 3] [--seconds 3]
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import time

from atari_throughput import collect_steps_per_sec
from envpool_backends import UNROLL, components, raw_steps_per_sec

from rlengine.config import DEFAULT_CONFIG
from rlengine.plugin.manager import build_plugins


def bare_games(env_id: str, copies: int) -> list:
    """``copies`` Parallel envs of ``env_id`` (``package/module``: ``mpe2/simple_spread_v3``), reset."""
    package, module = env_id.split("/", 1)
    make = importlib.import_module(f"{package}.{module}").parallel_env
    games = [make() for _ in range(copies)]
    for c, game in enumerate(games):
        game.reset(seed=c)
    return games


def bare_steps_per_sec(games: list, seconds: float) -> float:
    """Game steps/s of stepping ``games`` one after the other with random actions (drawn before timing)."""
    draws = [[{a: game.action_space(a).sample() for a in game.possible_agents} for _ in range(64)]
             for game in games]
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for game, actions in zip(games, draws):
            game.step({a: actions[steps % 64][a] for a in game.agents})
            if not game.agents:
                game.reset()
        steps += 1
    return steps * len(games) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="mpe2/simple_spread_v3")
    parser.add_argument("--copies", type=int, default=8)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    games = bare_games(args.env, args.copies)
    agents = len(games[0].possible_agents)
    parts = components(build_plugins(), DEFAULT_CONFIG, args.env, args.copies * agents)
    env, collector = parts.envs[0], parts.pipeline.collector
    best = {"bare": 0.0, "engine raw": 0.0, "engine collection": 0.0}
    unrolls = 1
    try:
        for _ in range(args.trials):
            best["bare"] = max(best["bare"], bare_steps_per_sec(games, args.seconds))
            best["engine raw"] = max(best["engine raw"], raw_steps_per_sec(env, args.seconds) / agents)
            start = time.perf_counter()
            rate = collect_steps_per_sec(collector, unrolls, UNROLL) / agents
            best["engine collection"] = max(best["engine collection"], rate)
            unrolls = max(1, int(unrolls * args.seconds / max(time.perf_counter() - start, 1e-3)))
    finally:
        parts.close()
        for game in games:
            game.close()
    print(f"{datetime.date.today()}, {args.env}, {args.copies} copies x {agents} agents "
          f"({args.copies * agents} rows), best of {args.trials} alternating trials; game steps/s")
    print("| measurement | game steps/s | / bare |")
    print("|---|---:|---:|")
    for label, rate in best.items():
        print(f"| {label} | {rate:,.0f} | {rate / best['bare']:.2f} |")
    print(f"target: engine collection >= 0.60 of bare ({'met' if best['engine collection'] >= 0.6 * best['bare'] else 'not met'})")


if __name__ == "__main__":
    main()
