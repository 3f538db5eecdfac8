"""``--ray``: the flags the ray plugin adds to ``rlengine train --seeds`` (and ``rlengine tune``).

``rlengine --help`` imports this module to build the parser, so it imports
no Ray: :meth:`RaySeeds.prepare` imports the launcher (:mod:`.seeds`).
"""

from __future__ import annotations

import argparse

from rlengine import Command, ConfigError


class RaySeeds(Command):
    """``--ray`` on ``rlengine train``: the seeds of ``--seeds`` run as Ray tasks."""

    help = "run --seeds on Ray"
    extends = "train"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_ray_arguments(parser, "seed")

    def prepare(self, args: argparse.Namespace) -> None:
        if not ray_wanted(args):
            return
        if args.seeds is None:
            raise ConfigError("--ray runs the runs of --seeds on Ray: add e.g. --seeds 0-3 (one run's env runners "
                              "go on Ray with --set train.pipeline=\"ray\")")
        from rlengine_ray.seeds import RayLauncher

        args.seed_launcher = RayLauncher(args.ray_address or "", args.ray_cpus, args.ray_gpus)


def add_ray_arguments(parser: argparse.ArgumentParser, each: str) -> None:
    """The flags ``train --seeds`` and ``tune`` share to run on Ray."""
    parser.add_argument("--ray", action="store_true", help=f"run each {each} as a Ray job (docs/ray.md)")
    parser.add_argument("--ray-address", metavar="ADDRESS",
                        help="join this Ray cluster (auto: the one `ray start --head` runs here); implies --ray; "
                             "default: start a local Ray")
    parser.add_argument("--ray-cpus", type=float, default=1.0, metavar="N", help=f"CPUs of each {each} (default 1)")
    parser.add_argument("--ray-gpus", type=float, default=0.0, metavar="N", help=f"GPUs of each {each} (default 0)")


def ray_wanted(args: argparse.Namespace) -> bool:
    """Whether ``--ray`` (or ``--ray-address``) was given; bad resources are refused in one line."""
    if not (getattr(args, "ray", False) or getattr(args, "ray_address", None)):
        return False
    if args.ray_cpus <= 0 or args.ray_gpus < 0:
        raise ConfigError(f"--ray-cpus must be above 0 and --ray-gpus at least 0, got {args.ray_cpus:g} and "
                          f"{args.ray_gpus:g}")
    return True
