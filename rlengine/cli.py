"""The ``rlengine`` command line: ``train``, ``plugins``, ``--version``."""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from typing import Optional, Sequence

from rlengine.errors import RLEngineError

TRAIN_FLAGS = {  # flag -> train.<key>
    "algorithm": "algorithm", "env": "env", "num_envs": "num_envs",
    "num_env_steps": "num_env_steps", "seed": "seed", "root_dir": "root_dir",
}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rlengine", description="A plugin-based reinforcement-learning engine.")
    p.add_argument("--version", action="store_true", help="print the version and exit")
    p.add_argument("--debug", action="store_true", help="show full tracebacks (plugin errors too)")
    p.add_argument("--disable-plugin", action="append", default=[], metavar="NAME",
                   help="skip an entry point by name (repeatable; also RLENGINE_DISABLE_PLUGINS=a,b)")
    sub = p.add_subparsers(dest="command")
    t = sub.add_parser("train", help="train an agent (no arguments: PPO on CartPole-v1)")
    t.add_argument("config", nargs="?", help="TOML config file (default: the embedded PPO/CartPole config)")
    t.add_argument("--algorithm", help="registered algorithm name (train.algorithm)")
    t.add_argument("--env", help="environment name or Gymnasium id (train.env)")
    t.add_argument("--num-envs", type=int, help="environment copies (train.num_envs)")
    t.add_argument("--num-env-steps", type=int, help="env-step budget (train.num_env_steps)")
    t.add_argument("--seed", type=int, help="run seed (train.seed)")
    t.add_argument("--root-dir", help="where logs, metrics.jsonl, config and checkpoints go")
    t.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="override any config key, e.g. --set ppo.learning_rate=3e-4")
    t.add_argument("--eager", action="store_true", help="run everything eagerly (debugging)")
    pl = sub.add_parser("plugins", help="list loaded plugins and what they register")
    pl.add_argument("--json", action="store_true", help="print a JSON array")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parser().parse_args(argv)
    if args.version:
        from rlengine import __version__

        print(f"rlengine {__version__}")
        return 0
    if args.command is None:
        parser().print_help()
        return 2
    try:
        if args.command == "plugins":
            return cmd_plugins(args)
        return cmd_train(args)
    except RLEngineError as exc:
        if args.debug:
            traceback.print_exc()
        print(f"rlengine: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("rlengine: interrupted", file=sys.stderr)
        return 130


def cmd_plugins(args: argparse.Namespace) -> int:
    from rlengine.plugins import build_plugins

    plugins = build_plugins(disabled=args.disable_plugin)
    rows = [{"name": i.name, "distribution": i.distribution, "version": i.version,
             **plugins.registered_by(i.name)} for i in plugins.infos]
    if args.json:
        failed = [{"name": f.name, "distribution": f.distribution, "version": f.version, "error": f.message}
                  for f in plugins.failures]
        print(json.dumps(rows + failed, indent=2))
    else:
        print_plugin_table(rows)
    for failure in plugins.failures:
        print(f"rlengine: error: {failure.message}", file=sys.stderr)
        if args.debug:
            print(failure.traceback, file=sys.stderr)
    return 1 if plugins.failures else 0


def print_plugin_table(rows: list) -> None:
    kinds = ("algorithms", "environments", "transformers", "writers", "distributions")
    table = [("plugin", "distribution", "version", "registers")]
    for r in rows:
        registers = "; ".join(f"{k}: {', '.join(r[k])}" for k in kinds if r[k]) or "(hooks only)"
        table.append((r["name"], r["distribution"], r["version"], registers))
    widths = [max(len(row[i]) for row in table) for i in range(3)]
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row[:3], widths)) + "  " + row[3])


def cmd_train(args: argparse.Namespace) -> int:
    from rlengine.engine import Engine

    overrides = [f"train.{key}={json.dumps(getattr(args, flag), ensure_ascii=False)}"
                 for flag, key in TRAIN_FLAGS.items() if getattr(args, flag) is not None]
    if args.eager:
        overrides.append("train.eager=true")
    engine = Engine(args.config, overrides + args.set, disabled_plugins=args.disable_plugin)
    result = engine.train()
    status = "reached" if result.reached_target else "did not reach"
    target = engine.config.train.target_return
    print(f"\nrlengine: {result.env_steps} env steps in {result.wall_time:.1f} s "
          f"(training {result.train_time:.1f} s); last evaluation return "
          f"{_fmt(result.eval_return)}" + (f", {status} the target {target:g}" if target is not None else ""))
    print(f"rlengine: logs, metrics.jsonl and checkpoints are in {result.root_dir}")
    print(f"rlengine: view them with: tensorboard --logdir {result.root_dir}")
    return 0


def _fmt(value: Optional[float]) -> str:
    return "n/a" if value is None else f"{value:.1f}"


if __name__ == "__main__":
    sys.exit(main())
