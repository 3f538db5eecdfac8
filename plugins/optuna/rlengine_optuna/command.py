"""``rlengine tune``: search hyperparameters of a config with Optuna.

``rlengine --help`` imports this module to list the command, so it imports
neither Optuna nor TensorFlow: :meth:`Tune.run` imports the tuner.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from typing import Sequence

from rlengine import Command


class Tune(Command):
    help = "tune hyperparameters with Optuna (TPE sampling, median pruning; an interrupted tune resumes)"
    description = (
        "Sample --param values with Optuna's TPE sampler, train one run per trial in this process, prune "
        "trials whose evaluation returns trail the median, and keep the study in --tune-dir: the same "
        "command continues it. Writes TUNE_DIR/best.toml, a config 'rlengine train' takes."
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        p = parser
        p.add_argument("config", nargs="?", help="TOML config file to tune (default: the embedded PPO/CartPole config)")
        p.add_argument("--param", action="append", default=[], metavar="SECTION.KEY=KIND:SPEC",
                       help="a key to tune (repeatable); KIND:SPEC is float:LOW:HIGH, loguniform:LOW:HIGH, "
                            "int:LOW:HIGH or categorical:A,B,C, e.g. --param ppo.learning_rate=loguniform:1e-5:1e-2")
        p.add_argument("--trials", type=int, default=20, metavar="N",
                       help="finished (complete or pruned) trials wanted in the study, earlier sessions' included")
        p.add_argument("--tune-dir", metavar="DIR",
                       help="where the study, the trials' run dirs and best.toml go (default: "
                            "tune/<algorithm>-<env>-<time>); an existing one is continued")
        p.add_argument("--seed", type=int, metavar="N",
                       help="every trial's train.seed, and the sampler's seed (default: the config's train.seed)")
        p.add_argument("--num-env-steps", type=int, metavar="N", help="env-step budget of each trial (train.num_env_steps)")
        p.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                       help="override a config key for every trial, e.g. --set train.eval_interval=20")
        p.add_argument("--last-evals", type=int, default=3, metavar="K",
                       help="the objective: mean return of each trial's last K evaluations")
        p.add_argument("--pruner", choices=["median", "none"], default="median",
                       help="median: stop a trial whose evaluation return is below the median of earlier trials "
                            "at the same env step, once it trained a third of its budget")
        p.add_argument("--startup-trials", type=int, default=5, metavar="N",
                       help="the first N trials are sampled at random and never pruned; then TPE samples and "
                            "the pruner judges")
        p.add_argument("--jobs", type=int, default=1, metavar="N",
                       help="trials training at a time on this machine, each in its own process, all asking one "
                            "study (default 1)")
        p.add_argument("--force", action="store_true",
                       help="continue --tune-dir even though its study was made with other --param's or config")

    def run(self, args: argparse.Namespace) -> int:
        from rlengine import RLEngineError
        from rlengine_optuna.journal import TuneDiskFull
        from rlengine_optuna.tuner import TuneInterrupted, Tuner, TuneSettings, print_summary

        for flag, value, least in (("--trials", args.trials, 1), ("--last-evals", args.last_evals, 1),
                                   ("--startup-trials", args.startup_trials, 0), ("--jobs", args.jobs, 1)):
            if value < least:
                raise RLEngineError(f"{flag} must be at least {least}, got {value}")
        overrides = list(args.set)
        if args.num_env_steps is not None:
            overrides.append(f"train.num_env_steps={args.num_env_steps}")
        settings = TuneSettings(
            params=args.param, config=args.config, overrides=overrides, trials=args.trials,
            tune_dir=args.tune_dir or "", seed=args.seed, last_evals=args.last_evals, pruner=args.pruner,
            startup_trials=args.startup_trials, force=args.force, disabled_plugins=tuple(args.disable_plugin),
            plugins=getattr(args, "plugins", None), jobs=args.jobs, job_index=job_index(),
            argv=tuple(getattr(args, "argv", None) or ()))
        tuner = Tuner(settings)
        runner = getattr(args, "tune_runner", None)  # set by a command extending tune: the ray plugin's --ray
        if runner is not None:
            return runner(tuner)
        try:
            result = tuner.run()
        except TuneInterrupted as exc:
            if job_index():  # one of --jobs' processes: the tune process says it
                return 128 + exc.signal_number
            print(f"rlengine: {exc}; resume with: {resume_command(getattr(args, 'argv', None), exc.tune_dir)}",
                  file=sys.stderr, flush=True)
            return 128 + exc.signal_number
        except TuneDiskFull as exc:  # the resume command named, --tune-dir included
            where = f"tune job {job_index()}: " if job_index() else ""
            resume = "" if job_index() else f"; resume with: {resume_command(getattr(args, 'argv', None), tuner.tune_dir)}"
            print(f"rlengine: error: {where}{exc}{resume}", file=sys.stderr, flush=True)
            return 1
        if not job_index():
            print()
            print_summary(result, tuner.params, tuner.objective)
        return 0


def job_index() -> int:
    """Which of ``--jobs``' processes this is: 0, the tune process, unless it started this one
    (:mod:`rlengine_optuna.jobs` sets the variable)."""
    return int(os.environ.get("RLENGINE_TUNE_JOB", "0") or 0)


def resume_command(argv: Sequence[str] | None, tune_dir: str) -> str:
    """The command line that continues the study: the same one, with its tune dir."""
    words = list(argv or ["tune"])
    if not any(w == "--tune-dir" or w.startswith("--tune-dir=") for w in words):
        words += ["--tune-dir", tune_dir]
    return shlex.join(["rlengine", *words])
