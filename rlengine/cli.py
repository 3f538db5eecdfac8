"""The ``rlengine`` command line: ``train``, ``plugins``, ``--version``, and on run directories
``eval``, ``play``, ``export`` and ``plot`` (their logic lives in rlengine/rundir.py, play.py,
export.py and plot.py)."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import traceback
from typing import Optional, Sequence

from rlengine.errors import RLEngineError, TrainingInterrupted

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
    t.add_argument("--deterministic", action="store_true",
                   help="op determinism: a resumed run ends as an uninterrupted one would (train.deterministic)")
    t.add_argument("--force", action="store_true",
                   help="resume --root-dir even though its config.toml differs from this run's config")
    pl = sub.add_parser("plugins", help="list loaded plugins and what they register")
    pl.add_argument("--json", action="store_true", help="print a JSON array")
    add_run_dir_commands(sub)
    return p


def add_run_dir_commands(sub: argparse._SubParsersAction) -> None:
    """``eval``, ``play``, ``export`` and ``plot``: commands on the directories ``train`` writes."""
    root_help = "run directory written by 'rlengine train' (holds config.toml and checkpoints/)"
    e = sub.add_parser("eval", help="evaluate the greedy policy of a run's newest checkpoint")
    e.add_argument("root_dir", metavar="ROOT_DIR", help=root_help)
    e.add_argument("--episodes", type=int, metavar="N",
                   help="evaluation episodes (default: the run's train.num_eval_episodes)")
    e.add_argument("--seed", type=int, metavar="N",
                   help="seed of the evaluation environments (default: the run's train.seed)")
    e.add_argument("--json", action="store_true", help="print one JSON object instead of a sentence")
    pa = sub.add_parser("play", help="run the greedy policy of a run's newest checkpoint, optionally recorded")
    pa.add_argument("root_dir", metavar="ROOT_DIR", help=root_help)
    pa.add_argument("--episodes", type=int, default=1, metavar="N", help="episodes to play in one environment copy")
    pa.add_argument("--record", metavar="OUT.gif|OUT.mp4",
                    help="write the rendered frames to a GIF or MP4 file (the environment must render RGB frames)")
    pa.add_argument("--fps", type=int, default=30, metavar="N", help="frames per second of the recording")
    pa.add_argument("--seed", type=int, metavar="N", help="seed of the environment (default: the run's train.seed)")
    x = sub.add_parser("export", help="write the greedy policy as a TensorFlow SavedModel (loads without rlengine)")
    x.add_argument("root_dir", metavar="ROOT_DIR", help=root_help)
    x.add_argument("out_dir", metavar="OUT_DIR",
                   help="new directory for the SavedModel, signature.json and README.txt (an earlier export "
                        "there is replaced)")
    pt = sub.add_parser("plot", help="draw learning curves of one or more runs from their metrics.jsonl")
    pt.add_argument("root_dirs", nargs="+", metavar="ROOT_DIR", help="run directories, overlaid, labelled by name")
    pt.add_argument("--out", required=True, metavar="CURVE.png",
                    help="image file to write (its extension picks the format: .png, .svg, .pdf)")
    pt.add_argument("--metric", default="eval/average_return",
                    help="metric of metrics.jsonl drawn as the main curve, next to train/episode_return")


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
        if args.command in RUN_DIR_COMMANDS:
            return RUN_DIR_COMMANDS[args.command](args)
        return cmd_train(args)
    except TrainingInterrupted as exc:  # SIGINT / SIGTERM: a checkpoint was written first
        print(f"rlengine: {exc}; resume with: {resume_command(argv, exc.root_dir)}", file=sys.stderr)
        return 128 + exc.signal_number  # the shell's convention: 130 for SIGINT, 143 for SIGTERM
    except RLEngineError as exc:
        if args.debug:
            traceback.print_exc()
        print(f"rlengine: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("rlengine: interrupted", file=sys.stderr)
        return 130


def resume_command(argv: Optional[Sequence[str]], root_dir: str) -> str:
    """The command line that continues an interrupted run: the same one, with its root dir."""
    words = list(sys.argv[1:] if argv is None else argv)
    if not any(w == "--root-dir" or w.startswith(("--root-dir=", "train.root_dir=")) for w in words):
        words += ["--root-dir", root_dir]
    return shlex.join(["rlengine", *words])


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
    if args.deterministic:
        overrides.append("train.deterministic=true")
    engine = Engine(args.config, overrides + args.set, disabled_plugins=args.disable_plugin, force=args.force)
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


def _seed_overrides(args: argparse.Namespace) -> list:
    return [] if args.seed is None else [f"train.seed={args.seed}"]


def cmd_eval(args: argparse.Namespace) -> int:
    from rlengine.rundir import open_run

    if args.episodes is not None and args.episodes < 1:
        raise RLEngineError(f"--episodes must be at least 1, got {args.episodes}")
    engine = open_run(args.root_dir, _seed_overrides(args), command="eval", disabled_plugins=args.disable_plugin)
    m = engine.evaluate(args.episodes)
    result = {"root_dir": args.root_dir, "episodes": int(m["eval/episodes"]), "mean_return": m["eval/average_return"],
              "std_return": m["eval/std_return"], "mean_length": m["eval/average_length"]}
    if args.json:
        print(json.dumps(result))
    else:
        print(f"rlengine: {result['episodes']} episodes of {args.root_dir}: mean return {result['mean_return']:.2f}, "
              f"std {result['std_return']:.2f}, mean length {result['mean_length']:.1f}")
    return 0


def cmd_play(args: argparse.Namespace) -> int:
    from rlengine.play import play_run

    def show(index, episode):
        print(f"episode {index + 1}: return {episode.episode_return:.2f}, length {episode.length}", flush=True)

    play_run(args.root_dir, args.episodes, args.record, args.fps, _seed_overrides(args), on_episode=show,
             disabled_plugins=args.disable_plugin)
    if args.record:
        print(f"rlengine: recorded to {args.record}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from rlengine.export import export_run

    info = export_run(args.root_dir, args.out_dir, disabled_plugins=args.disable_plugin)
    calls = "initial_state(batch_size), step(observation, step_type, state)" if info["stateful"] \
        else "action(observation)"
    print(f"rlengine: exported the greedy policy of {args.root_dir} ({info['checkpoint']}) to {args.out_dir}; "
          f"load it with tf.saved_model.load and call {calls}; see {args.out_dir}/README.txt")
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    from rlengine.plot import plot_runs

    curves = plot_runs(args.root_dirs, args.out, args.metric)
    runs = len(args.root_dirs)
    print(f"rlengine: wrote {args.out} ({runs} run{'s' * (runs != 1)}, {len(curves)} curves)")
    return 0


RUN_DIR_COMMANDS = {"eval": cmd_eval, "play": cmd_play, "export": cmd_export, "plot": cmd_plot}


if __name__ == "__main__":
    sys.exit(main())
