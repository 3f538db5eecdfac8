"""``rlengine collect``: record a finished run's greedy policy, or random play, into a Minari dataset.

::

    rlengine collect RUN_DIR --episodes 50 --out cartpole/expert-v0 [--checkpoint best|N] [--noise explore|X]
    rlengine collect --random --env CartPole-v1 --episodes 50 --out cartpole/random-v0
    rlengine collect RUN_DIR --from-replay --out pendulum/medium-replay-v0 [--episodes N]

The dataset is stored where Minari keeps its datasets (``MINARI_DATASETS_PATH``, default
``~/.minari/datasets``), with the environment's Gymnasium spec, so a run trained from it evaluates on
that environment. A policy's dataset also gets D4RL's reference scores: its own average return as the
expert one, Minari's random play as the random one.
"""

from __future__ import annotations

import argparse

from rlengine import Command


class Collect(Command):
    help = "record a run's greedy policy (or random play) into a Minari dataset"
    description = ("Steps the run's Gymnasium environment with its greedy policy (rlengine.load(RUN_DIR).predict), "
                   "or with uniformly random actions (--random --env ID), and writes the episodes as the Minari "
                   "dataset --out, which rlengine train --dataset reads (docs/offline.md).")

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("run_dir", nargs="?", help="a finished run's directory (not with --random)")
        parser.add_argument("--episodes", type=int,
                            help="episodes to record (with --from-replay: the newest N whole ones; default all)")
        parser.add_argument("--out", required=True, metavar="DATASET_ID",
                            help="the new dataset's id, e.g. cartpole/expert-v0 (namespace/name-vN)")
        parser.add_argument("--checkpoint", default="latest", help="latest (default), best, or an iteration number")
        parser.add_argument("--random", action="store_true", help="record uniformly random actions instead")
        parser.add_argument("--from-replay", action="store_true",
                            help="write the whole episodes of RUN_DIR's replay buffer (its newest checkpoint), "
                                 "stepping nothing: an off-policy run's experience, e.g. a medium-replay dataset")
        parser.add_argument("--env", help="with --random: the Gymnasium id to step")
        parser.add_argument("--seed", type=int, default=0, help="episode i starts from reset(seed=SEED + i)")
        parser.add_argument("--noise", default="", metavar="explore|X",
                            help="act with noise, not greedily: 'explore' samples the run's own exploration policy; "
                                 "a number X takes a random action with probability X (discrete actions) or adds "
                                 "Gaussian noise of X times half the action range (continuous), clipped to it")

    def run(self, args: argparse.Namespace) -> int:
        from rlengine import ConfigError

        if args.from_replay:
            return _from_replay(args)
        if args.episodes is None:
            raise ConfigError("--episodes N: how many episodes to record")
        if args.episodes < 1:
            raise ConfigError(f"--episodes {args.episodes}: record at least one episode")
        if args.random == (args.run_dir is not None):
            raise ConfigError("give either RUN_DIR (record its policy) or --random --env ID (random play)")
        if args.random and not args.env:
            raise ConfigError("--random needs --env ID: the Gymnasium environment to step")
        if args.env and not args.random:
            raise ConfigError("--env goes with --random; a run's policy is recorded on the run's own environment")
        if args.noise and args.random:
            raise ConfigError("--noise goes with a run's policy; --random plays uniformly random actions already")
        from rlengine_offline.sources import parse_noise, policy_source, random_source

        noise = parse_noise(args.noise)
        source = random_source(args.env) if args.random else policy_source(args.run_dir, args.checkpoint, noise)
        dataset = source.record(args.out, args.episodes, args.seed)
        print(f"rlengine: wrote dataset {args.out!r}: {dataset.total_episodes} episodes, {dataset.total_steps} "
              f"steps, average return {source.average_return:.1f} ({source.label})")
        return 0


def _from_replay(args: argparse.Namespace) -> int:
    from rlengine import ConfigError

    if args.run_dir is None or args.random or args.env or args.noise or args.checkpoint != "latest":
        raise ConfigError("--from-replay writes RUN_DIR's replay as it is: give RUN_DIR, without --random, --env, "
                          "--noise or --checkpoint (the replay is in the newest checkpoint)")
    if args.episodes is not None and args.episodes < 1:
        raise ConfigError(f"--episodes {args.episodes}: keep at least one episode")
    from rlengine_offline.sources import replay_dataset

    dataset, average = replay_dataset(args.run_dir, args.out, args.episodes)
    print(f"rlengine: wrote dataset {args.out!r}: {dataset.total_episodes} episodes, {dataset.total_steps} steps, "
          f"average return {average:.1f} (the replay of {args.run_dir})")
    return 0
