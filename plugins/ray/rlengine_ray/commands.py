"""``--ray``: the flags the ray plugin adds to ``rlengine train --seeds`` and ``rlengine tune``.

``rlengine --help`` imports this module to build the parser, so it imports
no Ray: the launcher (:mod:`.seeds`) and the tune runner (:mod:`.tune`) are
imported when ``--ray`` is given.
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


class RayTune(Command):
    """``--ray`` on ``rlengine tune``: the trials run on Ray Tune (:mod:`.tune`)."""

    help = "run tune's trials on Ray Tune: OptunaSearch (TPE) and ASHA"
    extends = "tune"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_ray_arguments(parser, "trial")
        parser.add_argument("--concurrent", type=int, default=2, metavar="N",
                            help="with --ray: trials training at a time (default 2)")
        parser.add_argument("--pbt", action="store_true",
                            help="with --ray: population-based training (Ray Tune's PBT) in place of a search: the "
                                 "--param keys are mutated as the members train (docs/tune.md)")
        parser.add_argument("--population", type=int, default=4, metavar="N",
                            help="with --pbt: members training at once (default 4)")
        parser.add_argument("--perturb-interval", type=int, metavar="STEPS",
                            help="with --pbt: env steps between exploit/explore rounds (default: a fifth of the "
                                 "budget)")

    def prepare(self, args: argparse.Namespace) -> None:
        if not ray_wanted(args):
            if args.pbt:
                raise ConfigError("--pbt trains its population on Ray Tune: add --ray (a local Ray starts by itself)")
            return
        if args.jobs != 1:
            raise ConfigError("--jobs runs trials in processes on this machine; with --ray, --concurrent N says how "
                              "many train at a time")
        if args.concurrent < 1:
            raise ConfigError(f"--concurrent must be at least 1, got {args.concurrent}")
        try:
            import ray.tune  # noqa: F401  (pandas, pyarrow: the extra, not the pipeline's dependencies)
        except ImportError:
            raise ConfigError("rlengine tune --ray needs Ray Tune, which is not installed: "
                              "pip install 'rlengine-ray[tune]'") from None

        if args.pbt and (args.population < 2 or (args.perturb_interval is not None and args.perturb_interval < 1)):
            raise ConfigError(f"--pbt needs --population of at least 2 and a --perturb-interval of at least 1 env "
                              f"step, got {args.population} and {args.perturb_interval}")

        def run_on_ray(tuner) -> int:
            if args.pbt:
                from rlengine_ray.pbt import run_pbt

                interval = args.perturb_interval or max(1, tuner.base.config.train.num_env_steps // 5)
                return run_pbt(tuner, args.ray_address or "", args.ray_cpus, args.ray_gpus, args.population, interval)
            from rlengine_ray.tune import run_on_ray

            return run_on_ray(tuner, args.ray_address or "", args.ray_cpus, args.ray_gpus, args.concurrent)

        args.tune_runner = run_on_ray
