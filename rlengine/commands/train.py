"""``rlengine train``: train an agent from a TOML config, flags and ``--set`` overrides."""

from __future__ import annotations

import argparse
import json
from typing import Optional

from rlengine.api.command import Command
from rlengine.commands import seeds
from rlengine.commands.terminal import say_on_a_terminal

TRAIN_FLAGS = {  # flag -> train.<key>
    "algorithm": "algorithm", "env": "env", "num_envs": "num_envs",
    "num_env_steps": "num_env_steps", "seed": "seed", "root_dir": "root_dir", "dataset": "dataset",
    "init_from": "init_from",
}


class Train(Command):
    help = "train an agent (no arguments: PPO on CartPole-v1)"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        t = parser
        t.add_argument("config", nargs="?", help="TOML config file (default: the embedded PPO/CartPole config)")
        t.add_argument("--algorithm", help="registered algorithm name (train.algorithm)")
        t.add_argument("--env", help="environment name or Gymnasium id (train.env)")
        t.add_argument("--dataset", help="a Minari dataset id or path to learn from offline (train.dataset; "
                                         "needs the offline plugin, docs/offline.md)")
        t.add_argument("--init-from", metavar="RUN_DIR",
                       help="start from that run's checkpoint (train.init_from; train.init_checkpoint picks which): "
                            "fine-tuning, or offline to online with --dataset (docs/offline.md)")
        t.add_argument("--num-envs", type=int, help="environment copies (train.num_envs)")
        t.add_argument("--num-env-steps", type=int, help="env-step budget (train.num_env_steps)")
        t.add_argument("--seed", type=int, help="run seed (train.seed)")
        t.add_argument("--root-dir", help="where logs, metrics.jsonl, config and checkpoints go")
        t.add_argument("--no-preset", action="store_true",
                       help="without a config file: start from every key's default, not from the preset a plugin "
                            "registered for --algorithm and --env (rlengine plugins lists the presets)")
        t.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                       help="override any config key, e.g. --set ppo.learning_rate=3e-4")
        t.add_argument("--eager", action="store_true", help="run everything eagerly (debugging)")
        t.add_argument("--deterministic", action="store_true",
                       help="op determinism: a resumed run ends as an uninterrupted one would (train.deterministic)")
        t.add_argument("--force", action="store_true",
                       help="resume --root-dir even though its config.toml differs from this run's config")
        t.add_argument("--seeds", metavar="LIST",
                       help="one run per seed, e.g. 0-4 or 0,2,5: --root-dir DIR gets DIR/seed-N each (docs/seeds.md)")
        t.add_argument("--jobs", type=int, metavar="N",
                       help=f"with --seeds: runs at a time (default: {seeds.DEFAULT_JOBS_TEXT})")

    def run(self, args: argparse.Namespace) -> int:
        if args.seeds is not None or args.jobs is not None:  # a parent of one child process per seed
            from rlengine.commands.seed_processes import train_seeds

            overrides = train_overrides(args, skip=seeds.PER_SEED_FLAGS)
            return train_seeds(seeds.with_preset(args, overrides), overrides)
        from rlengine.quiet_tensorflow import import_tensorflow

        import_tensorflow()  # before the run's modules import it (rlengine.run does not)
        from rlengine.run.engine import Engine

        engine = Engine(args.config, train_overrides(args), plugins=getattr(args, "plugins", None),
                        disabled_plugins=args.disable_plugin, force=args.force, use_preset=not args.no_preset)
        if engine.preset is not None:
            print(engine.preset.announcement(), flush=True)
        cfg = engine.config.train
        say_on_a_terminal(f"rlengine: building {cfg.algorithm} on {cfg.env} ({cfg.num_envs} copies) and tracing "
                          "its first iteration")
        result = engine.train()
        status = "reached" if result.reached_target else "did not reach"
        target = engine.config.train.target_return
        print(f"\nrlengine: {result.env_steps} env steps in {result.wall_time:.1f} s "
              f"(training {result.train_time:.1f} s); last evaluation return "
              f"{_fmt(result.eval_return)}" + (f", {status} the target {target:g}" if target is not None else ""))
        print(f"rlengine: logs, metrics.jsonl and checkpoints are in {result.root_dir}")
        print(f"rlengine: view them with: tensorboard --logdir {result.root_dir}")
        return 0


def train_overrides(args: argparse.Namespace, skip: tuple = ()) -> list:
    """The flags (but those in ``skip``) as ``train.<key>`` overrides, then the ``--set`` ones (which win)."""
    overrides = [f"train.{key}={json.dumps(getattr(args, flag), ensure_ascii=False)}"
                 for flag, key in TRAIN_FLAGS.items() if flag not in skip and getattr(args, flag) is not None]
    if args.eager:
        overrides.append("train.eager=true")
    if args.deterministic:
        overrides.append("train.deterministic=true")
    return overrides + args.set


def _fmt(value: Optional[float]) -> str:
    return "n/a" if value is None else f"{value:.1f}"
