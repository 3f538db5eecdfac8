"""The commands on run directories: ``rlengine eval``, ``play``, ``export`` and ``plot`` (``runs``: runs.py).

``rlengine --help`` imports this module to list them, so it imports no
TensorFlow: each ``run`` imports the module that does the work.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from rlengine import Command, RLEngineError

ROOT_HELP = "run directory written by 'rlengine train' (holds config.toml and checkpoints/)"


def seed_overrides(args: argparse.Namespace) -> list:
    """``--seed N`` as a ``train.seed`` override (none without the flag: the run's own seed)."""
    return [] if args.seed is None else [f"train.seed={args.seed}"]


def engine_kwargs(args: argparse.Namespace) -> dict:
    """The plugin manager the CLI built, so the run directory is opened with the same plugins."""
    return {"plugins": getattr(args, "plugins", None), "disabled_plugins": args.disable_plugin}


def import_tensorflow_quietly() -> None:
    """Import TensorFlow through rlengine, which silences its C++ start-up chatter on stderr.

    ``play`` and ``export`` import TensorFlow at their top; without this the
    chatter would come before the command's own lines.
    """
    import rlengine.collect  # noqa: F401  (its __init__ imports TensorFlow quietly)


def add_checkpoint_argument(parser: argparse.ArgumentParser) -> None:
    from rlengine_tools.rundir import CHECKPOINT_HELP  # no TensorFlow there at import

    parser.add_argument("--checkpoint", default="latest", metavar="best|latest|N", help=CHECKPOINT_HELP)


class Eval(Command):
    help = "evaluate the greedy policy of a run's checkpoint (the newest, or --checkpoint best|N)"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("root_dir", metavar="ROOT_DIR", help=ROOT_HELP)
        add_checkpoint_argument(parser)
        parser.add_argument("--episodes", type=int, metavar="N",
                            help="evaluation episodes (default: the run's train.num_eval_episodes)")
        parser.add_argument("--seed", type=int, metavar="N",
                            help="seed of the evaluation environments (default: the run's train.seed)")
        parser.add_argument("--json", action="store_true", help="print one JSON object instead of a sentence")

    def run(self, args: argparse.Namespace) -> int:
        from rlengine_tools.rundir import checked_checkpoint, describe_checkpoint, evaluate_checkpoint, open_run

        if args.episodes is not None and args.episodes < 1:
            raise RLEngineError(f"--episodes must be at least 1, got {args.episodes}")
        choice = checked_checkpoint(args.checkpoint)
        episodes = [] if args.episodes is None else [f"train.num_eval_episodes={args.episodes}"]
        engine = open_run(args.root_dir, [*seed_overrides(args), *episodes], command="eval", **engine_kwargs(args))
        m, summary = evaluate_checkpoint(engine, choice)
        result = {"root_dir": args.root_dir, "checkpoint": summary["checkpoint"], "iteration": summary["iteration"],
                  "checkpoint_eval_return": summary["eval_return"], "episodes": int(m["eval/episodes"]),
                  "mean_return": m["eval/average_return"], "std_return": m["eval/std_return"],
                  "mean_length": m["eval/average_length"]}
        if args.json:
            print(json.dumps(result))
        else:
            print(f"rlengine: {result['episodes']} episodes of {args.root_dir} ({describe_checkpoint(summary)}): "
                  f"mean return {result['mean_return']:.2f}, std {result['std_return']:.2f}, "
                  f"mean length {result['mean_length']:.1f}")
        return 0


class Play(Command):
    help = "run the greedy policy of a run's checkpoint (the newest, or --checkpoint best|N), optionally recorded"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("root_dir", metavar="ROOT_DIR", help=ROOT_HELP)
        add_checkpoint_argument(parser)
        parser.add_argument("--episodes", type=int, default=1, metavar="N",
                            help="episodes to play in one environment copy")
        parser.add_argument("--record", metavar="OUT.gif|OUT.mp4",
                            help="write the rendered frames to a GIF or MP4 file (the environment must render "
                                 "RGB frames)")
        parser.add_argument("--fps", type=int, default=30, metavar="N", help="frames per second of the recording")
        parser.add_argument("--seed", type=int, metavar="N",
                            help="seed of the environment (default: the run's train.seed)")

    def run(self, args: argparse.Namespace) -> int:
        import_tensorflow_quietly()
        from rlengine_tools.play import play_run
        from rlengine_tools.rundir import describe_checkpoint

        def show(index: int, episode: Any) -> None:
            print(f"episode {index + 1}: return {episode.episode_return:.2f}, length {episode.length}", flush=True)

        def announce(summary: dict) -> None:
            print(f"rlengine: playing {args.root_dir} ({describe_checkpoint(summary)})", flush=True)

        play_run(args.root_dir, args.episodes, args.record, args.fps, seed_overrides(args), on_episode=show,
                 checkpoint=args.checkpoint, on_checkpoint=announce, **engine_kwargs(args))
        if args.record:
            print(f"rlengine: recorded to {args.record}")
        return 0


class Export(Command):
    help = "write the greedy policy as a TensorFlow SavedModel (loads without rlengine)"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("root_dir", metavar="ROOT_DIR", help=ROOT_HELP)
        parser.add_argument("out_dir", metavar="OUT_DIR",
                            help="new directory for the SavedModel, its LiteRT model (policy.tflite), signature.json "
                                 "and README.txt (an earlier export there is replaced)")
        add_checkpoint_argument(parser)

    def run(self, args: argparse.Namespace) -> int:
        import_tensorflow_quietly()
        from rlengine_tools.export import export_run
        from rlengine_tools.rundir import describe_checkpoint

        info = export_run(args.root_dir, args.out_dir, checkpoint=args.checkpoint, **engine_kwargs(args))
        calls = "initial_state(batch_size), step(observation, step_type, state)" if info["stateful"] \
            else "action(observation)"
        print(f"rlengine: exported the greedy policy of {args.root_dir} ({describe_checkpoint(info)}) to "
              f"{args.out_dir}; load it with tf.saved_model.load and call {calls}; see {args.out_dir}/README.txt")
        return 0


class Plot(Command):
    help = "draw learning curves of runs from their metrics.jsonl (several seeds: their mean and a confidence band)"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("root_dirs", nargs="+", metavar="DIR",
                            help="run directories, or directories holding runs (e.g. the --root-dir of train --seeds)")
        parser.add_argument("--out", required=True, metavar="CURVE.png",
                            help="image file to write (its extension picks the format: .png, .svg, .pdf)")
        parser.add_argument("--metric", default="eval/average_return",
                            help="metric of metrics.jsonl drawn as the main curve, next to train/episode_return")
        parser.add_argument("--smooth", type=int, default=1, metavar="K",
                            help="trailing moving average over the last K points of each run (default 1: none)")
        parser.add_argument("--iqm", action="store_true",
                            help="seeds of one config: draw the interquartile mean instead of the mean")
        parser.add_argument("--no-groups", action="store_true",
                            help="overlay every run on its own, even seeds of one config")

    def run(self, args: argparse.Namespace) -> int:
        from rlengine_tools.plot import plot_dirs  # no TensorFlow: plotting reads metrics.jsonl only

        drawn = plot_dirs(args.root_dirs, args.out, args.metric, args.smooth, args.iqm, not args.no_groups)
        print(f"rlengine: wrote {args.out} ({drawn})")
        return 0
