"""Collection speed on EnvPool's environments against the same tasks through Gymnasium, side by side.

Rows: a MuJoCo task (default ``HalfCheetah-v4``, 16 copies, PPO's default policy) and an Atari game
(default ``Pong-v5``, 8 copies, PPO with the Nature CNN of ``examples/ppo_breakout.toml``), each through
the gym plugin (``SyncVectorEnv``) and through ``envpool/<task id>``; beside each, raw stepping of the same
environment with random actions (no policy, no tensors). A last row runs the MuJoCo task on the async
pipeline with one EnvPool per env thread (``--env-threads``), so one thread's EnvPool steps while the
other's policy acts; its figure is unrolls received by the learner. Trials alternate; the best of each is
shown. Target (issue 45): EnvPool's MuJoCo collection at least 1.5x the Gymnasium sync path's.

    python benchmarks/envpool_backends.py [--mujoco HalfCheetah-v4] [--atari Pong-v5] [--trials 3] [--seconds 3]
"""

import argparse
import tempfile
import time

import numpy as np
from atari_throughput import collect_steps_per_sec

from rlengine.config import DEFAULT_CONFIG, apply_overrides, build_config, read_toml
from rlengine.plugin.manager import build_plugins
from rlengine.run.build import build_components, config_classes

UNROLL = 32


def components(plugins, config_file: str, env: str, copies: int, *overrides: str):
    raw = apply_overrides(read_toml(config_file), [
        f"train.env={env!r}", f"train.num_envs={copies}", f"train.unroll_length={UNROLL}", "train.writers=[]",
        "train.eval_interval=0", 'gym.vectorization="sync"', *overrides])
    return build_components(build_config(raw, config_classes(plugins)), plugins, tempfile.mkdtemp())


def random_actions(spec, copies: int, steps: int) -> np.ndarray:
    low, high = np.broadcast_to(spec.minimum, spec.shape), np.broadcast_to(spec.maximum, spec.shape)
    if spec.dtype.is_integer:
        return np.random.randint(low, high + 1, size=(steps, copies, *spec.shape)).astype(np.int32)
    return np.random.uniform(low, high, size=(steps, copies, *spec.shape)).astype(np.float32)


def raw_steps_per_sec(env, seconds: float) -> float:
    """The environment alone: random actions, no policy, no tensors."""
    actions = random_actions(env.action_spec(), env.batch_size, 256)
    env.reset()
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        env.step(actions[steps % len(actions)])
        steps += 1
    return steps * env.batch_size / (time.perf_counter() - start)


def side_by_side(plugins, config_file: str, envs: tuple, copies: int, trials: int, seconds: float) -> dict:
    """``env -> (raw best, collection best)``, the envs' trials alternating."""
    built = {env: components(plugins, config_file, env, copies) for env in envs}
    best = {env: [0.0, 0.0] for env in envs}
    unrolls = {env: 1 for env in envs}
    try:
        for _ in range(trials):
            for env, parts in built.items():
                collector = parts.pipeline.collector
                best[env][0] = max(best[env][0], raw_steps_per_sec(parts.envs[0], seconds))
                start = time.perf_counter()
                rate = collect_steps_per_sec(collector, unrolls[env], UNROLL)
                # size the next trial's unrolls to last about ``seconds``
                unrolls[env] = max(1, int(unrolls[env] * seconds / max(time.perf_counter() - start, 1e-3)))
                best[env][1] = max(best[env][1], rate)
    finally:
        for parts in built.values():
            parts.close()
    return best


def async_collection(plugins, env: str, copies: int, threads: int, seconds: float) -> float:
    """Env steps/s of unrolls the async pipeline's learner receives, one EnvPool per env thread."""
    parts = components(plugins, DEFAULT_CONFIG, env, copies, 'train.pipeline="async"',
                       f"async.num_env_threads={threads}", "async.num_actor_threads=0")
    pipeline = parts.pipeline
    try:
        pipeline.start()
        pipeline._next_unroll()  # traced
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            steps += int(pipeline._next_unroll().experience.step_type.shape[1]) * UNROLL
        return steps / (time.perf_counter() - start)
    finally:
        parts.close()


def print_rows(task: str, copies: int, best: dict) -> None:
    gym, pool = best[task], best[f"envpool/{task}"]
    for name, (raw, collected) in ((task, gym), (f"envpool/{task}", pool)):
        print(f"  {name:28} {copies:3} copies: raw {raw:>10,.0f} env steps/s, collection {collected:>9,.0f}")
    print(f"  envpool/gymnasium: raw {pool[0] / gym[0]:.2f}x, collection {pool[1] / gym[1]:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mujoco", default="HalfCheetah-v4")
    parser.add_argument("--mujoco-copies", type=int, default=16)
    parser.add_argument("--atari", default="Pong-v5")
    parser.add_argument("--atari-copies", type=int, default=8)
    parser.add_argument("--env-threads", type=int, default=2)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    plugins = build_plugins()
    mujoco = (args.mujoco, f"envpool/{args.mujoco}")
    # first: the async pipeline sizes TensorFlow's thread pools, which only a process that ran no op yet can
    rate = async_collection(plugins, mujoco[1], args.mujoco_copies, args.env_threads, args.seconds * args.trials)
    print(f"MuJoCo, PPO's default policy (unrolls of {UNROLL} steps), best of {args.trials} trials:")
    print_rows(args.mujoco, args.mujoco_copies,
               side_by_side(plugins, DEFAULT_CONFIG, mujoco, args.mujoco_copies, args.trials, args.seconds))
    print(f"  {mujoco[1]} on the async pipeline, {args.env_threads} env threads x "
          f"{args.mujoco_copies // args.env_threads} copies: {rate:,.0f} env steps/s received")
    atari = (f"ALE/{args.atari}", f"envpool/{args.atari}")
    print(f"Atari, PPO with the Nature CNN (examples/ppo_breakout.toml), best of {args.trials} trials:")
    best = side_by_side(plugins, "examples/ppo_breakout.toml", atari, args.atari_copies, args.trials, args.seconds)
    best[args.atari] = best.pop(atari[0])
    print_rows(args.atari, args.atari_copies, best)


if __name__ == "__main__":
    main()
