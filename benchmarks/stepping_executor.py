"""TensorFlow's single-threaded executor for the loops that step environments (the engine's
``SteppingFunction``, what the sync collector and the evaluator run on) against the default executor.

A collection or evaluation step is a chain of small ops around one ``tf.numpy_function``; the default
executor hands ready ops to the inter-op pool. The single-threaded executor runs them in order on one
thread (it needs its functions traced with unlowered ``tf.while_loop``/``tf.cond``, which tracing under
``function_executor_type`` does). Side by side in one run, alternating:

1. the sync collector's unroll (default PPO on CartPole-v1, ``--num-envs`` copies) on either executor;
2. the evaluator's in-graph episodes (the untrained policy, ``--episodes-per-copy`` on each copy);
3. whether a graph error inside the loop still says where the failing op was defined
   (``Detected at node ... defined at``, which the engine's one-line error names): on the
   single-threaded executor only because ``SteppingFunction`` reruns a failed call on the default one.

Measured on 2026-12-03 (2-core CPU, this script's defaults, before the engine switched): collection at 8
copies 15,200 -> 23,400 env steps/s (1.54x), evaluation 17,500 -> 34,500 env steps/s (1.97x).

    python benchmarks/stepping_executor.py [--num-envs 8] [--unrolls 40] [--episodes-per-copy 20] [--trials 3]
"""

import argparse
import tempfile
import time
import types

import tensorflow as tf
from collect_throughput import collection_config, driver_steps_per_sec

from rlengine.collect.fixed_signature import FixedSignatureFunction
from rlengine.collect.stepping_function import LOCATED, SteppingFunction
from rlengine.plugin.manager import build_plugins
from rlengine.run.build import build_components
from rlengine.run.evaluator import Evaluator


def on_executor(python_function, name: str, caller):
    """A fresh function of ``python_function`` on executor ``name``: a ``FixedSignatureFunction`` on the
    default executor, or the engine's ``SteppingFunction`` (``caller``: the EnvCaller it steps), which is one
    on the single-threaded executor: both skip the argument matching, so only the executor differs."""
    if name == "default":
        return FixedSignatureFunction(python_function)
    return SteppingFunction(python_function, caller)


def evaluation_steps_per_sec(evaluator: Evaluator) -> float:
    start = time.perf_counter()
    result = evaluator.run()
    return result["eval/average_length"] * result["eval/episodes"] / (time.perf_counter() - start)


def error_says_where(name: str) -> bool:
    """Whether an out-of-range gather inside a while loop is reported with its op's definition."""
    def loop():
        def body(i):
            return (i + tf.cast(tf.gather(tf.constant([1.0, 2.0]), i + 5), tf.int32),)
        return tf.while_loop(lambda i: i < 3, body, (tf.constant(0),))

    try:
        on_executor(loop, name, types.SimpleNamespace(error=None, env=None))()
    except tf.errors.InvalidArgumentError as error:
        return LOCATED in error.message
    raise AssertionError("the gather did not fail")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--unrolls", type=int, default=40)
    parser.add_argument("--episodes-per-copy", type=int, default=20)
    parser.add_argument("--trials", type=int, default=3)
    args = parser.parse_args()
    plugins = build_plugins()
    config = collection_config(plugins, args.num_envs)
    names = ("default", "single-threaded")
    parts = {name: build_components(config, plugins, tempfile.mkdtemp()) for name in names}
    shared = parts["default"].evaluator  # one environment and policy for both: the same episode lengths
    evaluators = {}
    for name, components in parts.items():
        collector = components.pipeline.collector
        collector.run = on_executor(collector._run, name, collector.env)
        collector.start = on_executor(collector._start, name, collector.env)
        evaluator = Evaluator(shared.env, shared.chain, shared.algorithm,
                              shared.env.batch_size * args.episodes_per_copy)
        evaluator.evaluate = on_executor(evaluator._evaluate, name, evaluator.caller)
        evaluator.run()  # trace once, before the timed trials
        evaluators[name] = evaluator
    best_collection, best_evaluation = dict.fromkeys(names, 0.0), dict.fromkeys(names, 0.0)
    for _ in range(args.trials):
        for name in names:
            steps = driver_steps_per_sec(parts[name], args.unrolls)
            best_collection[name] = max(best_collection[name], steps)
            best_evaluation[name] = max(best_evaluation[name], evaluation_steps_per_sec(evaluators[name]))
    for name in names:
        print(f"{name:>16} executor: collection {best_collection[name]:9,.0f} env steps/s ({args.num_envs} copies); "
              f"evaluation {best_evaluation[name]:9,.0f} env steps/s; an error in a loop says where its op was defined: "
              f"{error_says_where(name)}")
    print(f"single-threaded / default: collection {best_collection[names[1]] / best_collection[names[0]]:.2f}x, "
          f"evaluation {best_evaluation[names[1]] / best_evaluation[names[0]]:.2f}x")
    for evaluator in evaluators.values():
        evaluator.close()  # its fault watch's worker thread
    for components in parts.values():
        components.close()


if __name__ == "__main__":
    main()
