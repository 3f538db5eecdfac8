"""How fast the evaluator plays: one graph call per evaluation against one ``tf.function`` call per step.

Trains PPO on CartPole-v1 (examples/ppo_cartpole.toml) until its greedy
policy holds the pole for 500 steps, then, with that checkpoint restored,
times ``--repeats`` evaluations of ``--episodes`` episodes (10 copies: one
episode each, as ``train.num_eval_episodes = 10`` plays them) with

* ``in-graph``: :class:`rlengine.run.evaluator.Evaluator`, what runs use;
* ``per-step``: the loop the evaluator ran before it moved into the graph
  (kept here, verbatim in behaviour, as the reference): a ``tf.function``
  call for the greedy step, then the environment stepped from Python.

The two alternate, each evaluation starts from the same saved environment
state, the first evaluation of each (tracing) is timed apart, and all must
give the same scores. Printed: seconds per evaluation
(median), env steps per second, and the ratio.

The reference runs on today's environment stack and policy, which other
changes have made faster since the evaluator moved into the graph.
``--before DIR`` instead compares whole checkouts: each variant, this
checkout and the one in ``DIR`` (e.g. ``git worktree add /tmp/before
576e455``, the commit before the move), trains and times its own run's
evaluator (``components.evaluator.run()``) in a fresh process, the two
alternating ``--rounds`` times; the ratio is of time per env step.

    python benchmarks/eval_speed.py [--episodes 10] [--repeats 5] [--before DIR [--rounds 3]]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np
import tensorflow as tf
from runs import run_in_checkout

import rlengine
from rlengine.api.data import StepType
from rlengine.collect.policy_step import greedy

EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "ppo_cartpole.toml")


class PerStepEvaluator:
    """The evaluator before this change: one ``tf.function`` call per env step, from a Python loop."""

    def __init__(self, evaluator):
        self.env, self.chain, self.algorithm, self.quota = (evaluator.env, evaluator.chain, evaluator.algorithm,
                                                            evaluator.quota)
        self.act = tf.function(lambda raw, t, p: greedy(self.chain, self.algorithm, raw, t, p, self.env.batch_size),
                               autograph=False)

    def run(self) -> dict:
        batch = self.env.batch_size
        raw = self.env.reset()
        t_state, p_state = self.chain.initial_state(batch), self.algorithm.initial_state(batch)
        returns, lengths, done = np.zeros(batch), np.zeros(batch, np.int64), np.zeros(batch, np.int64)
        finished_returns, finished_lengths = [], []
        while (done < self.quota).any():
            action, t_state, p_state = self.act(raw, t_state, p_state)
            raw = self.env.step(tf.nest.map_structure(lambda a: a.numpy(), action))
            live = (done < self.quota) & (raw.step_type != StepType.FIRST)
            returns[live] += raw.reward[live]
            lengths[live] += 1
            for i in np.flatnonzero(live & (raw.step_type == StepType.LAST)):
                finished_returns.append(returns[i])
                finished_lengths.append(lengths[i])
                returns[i], lengths[i] = 0.0, 0
                done[i] += 1
        return {"eval/average_return": float(np.mean(finished_returns)),
                "eval/std_return": float(np.std(finished_returns)),
                "eval/average_length": float(np.mean(finished_lengths)), "eval/episodes": float(len(finished_returns))}


def timed(evaluate, env, start_state: bytes) -> tuple[float, dict]:
    """Seconds and scores of one evaluation, from the environment's saved start (so every one plays the same
    episodes, whether or not the policy always holds the pole)."""
    env.restore_state(start_state)
    t0 = time.perf_counter()
    result = evaluate()
    return time.perf_counter() - t0, result


#: Run in either checkout, so it uses only what both have: train, restore the best, time the run's evaluator.
_OWN_EVALUATOR = """
import json, shutil, statistics, sys, tempfile, time, rlengine
root = tempfile.mkdtemp(prefix="eval-speed-")
engine = rlengine.Engine(sys.argv[1], [f"train.root_dir={root!r}", *sys.argv[3:]])
engine.train()
with engine.restored("best") as components:
    components.evaluator.run()  # the first, with tracing
    times = []
    for _ in range(int(sys.argv[2])):
        t0 = time.perf_counter()
        result = components.evaluator.run()
        times.append(time.perf_counter() - t0)
shutil.rmtree(root)
print(json.dumps([statistics.median(times), result["eval/average_length"] * result["eval/episodes"],
                  result["eval/average_return"]]))
"""


def own_evaluator(core: str, repeats: int, overrides: list) -> tuple:
    """``(seconds per evaluation, env steps, return)`` of the evaluator of checkout ``core``, in a fresh process."""
    out = run_in_checkout(core, [sys.executable, "-c", _OWN_EVALUATOR, EXAMPLE, str(repeats), *overrides],
                          text=True).stdout
    return tuple(json.loads(out.strip().splitlines()[-1]))


def compare_checkouts(before: str, rounds: int, repeats: int, overrides: list) -> None:
    this = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    variants = {"this": this, "before": os.path.abspath(before)}
    per_step: dict = {name: [] for name in variants}
    for i in range(rounds):
        for name, core in variants.items():
            seconds, steps, score = own_evaluator(core, repeats, overrides)
            per_step[name].append(seconds / steps)
            print(f"  {name:<6} #{i + 1}: {seconds:.3f} s per evaluation, {steps:.0f} env steps, return {score:.1f}, "
                  f"{1e6 * seconds / steps:.1f} µs per env step", flush=True)
    this_step, before_step = (statistics.median(per_step[name]) for name in variants)
    print(f"\nmedian of {rounds} rounds: this {1e6 * this_step:.1f} µs per env step, before "
          f"{1e6 * before_step:.1f}: this checkout's evaluator is {before_step / this_step:.1f}x faster "
          f"(rounds: {', '.join(f'{b / t:.1f}x' for t, b in zip(*per_step.values()))})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--train-steps", type=int, default=100_000, help="PPO training budget (stops at 500)")
    parser.add_argument("--before", metavar="DIR", help="compare with the evaluator of the checkout in DIR")
    parser.add_argument("--rounds", type=int, default=3, help="with --before: processes per checkout, alternating")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}")
    training = [f"train.num_env_steps={args.train_steps}", "train.writers=[]", "train.eval_interval=5",
                "train.target_return=500.0", f"train.num_eval_episodes={args.episodes}"]
    if args.before:
        compare_checkouts(args.before, args.rounds, args.repeats, training)
        print(f"load average after: {os.getloadavg()}")
        return
    with tempfile.TemporaryDirectory(prefix="eval-speed-") as root:
        engine = rlengine.Engine(EXAMPLE, [f"train.root_dir={root!r}", *training])
        engine.train()
        with engine.restored("best") as components:
            variants = {"in-graph": components.evaluator, "per-step": PerStepEvaluator(components.evaluator)}
            env = components.evaluator.env
            start_state = env.state()
            first = {name: timed(v.run, env, start_state) for name, v in variants.items()}
            times: dict = {name: [] for name in variants}
            for _ in range(args.repeats):
                for name, variant in variants.items():
                    seconds, result = timed(variant.run, env, start_state)
                    times[name].append(seconds)
                    assert result == first[name][1], (name, result, first[name][1])  # the same episodes each time
    a, b = first["in-graph"][1], first["per-step"][1]
    assert all(abs(a[k] - b[k]) <= 1e-9 * max(1.0, abs(b[k])) for k in a), (a, b)
    steps = a["eval/average_length"] * a["eval/episodes"]
    print(f"\n{int(a['eval/episodes'])} greedy CartPole-v1 episodes, average length {a['eval/average_length']:.0f} "
          f"({steps:.0f} env steps), return {a['eval/average_return']:.1f}; median of {args.repeats}:")
    for name in variants:
        median = statistics.median(times[name])
        print(f"  {name:<9} {median:7.3f} s per evaluation  {steps / median:9,.0f} env steps/s  "
              f"(first, with tracing: {first[name][0]:.2f} s)")
    print(f"  in-graph is {statistics.median(times['per-step']) / statistics.median(times['in-graph']):.1f}x faster")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
