"""The ``rlengine`` command line: global options, then one subcommand per registered command.

Commands are plugins (``rlengine_register_commands``): the core registers
``train`` and ``plugins``; ``rlengine-tools`` adds ``eval``, ``play``,
``export`` and ``plot``. The plugin manager is built before parsing so that
``--help`` lists them all; registrations are lazy references, so neither it
nor ``--version`` imports TensorFlow. Every :class:`rlengine.RLEngineError`
becomes one ``rlengine: error:`` line and exit status 2.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from typing import Any, Optional, Sequence

from rlengine.errors import RLEngineError, TrainingInterrupted


def global_parser(add_help: bool = True) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rlengine", add_help=add_help,
                                description="A plugin-based reinforcement-learning engine.")
    p.add_argument("--version", action="store_true", help="print the version and exit")
    p.add_argument("--debug", action="store_true", help="show full tracebacks (plugin errors too)")
    p.add_argument("--disable-plugin", action="append", default=[], metavar="NAME",
                   help="skip a plugin by name (repeatable; also RLENGINE_DISABLE_PLUGINS=a,b)")
    return p


def parser(commands: Optional[dict] = None) -> argparse.ArgumentParser:
    """The whole parser: global options and a subparser per command (default: every registered one)."""
    p = global_parser()
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for name, command in sorted((commands_of() if commands is None else commands).items()):
        help_text = command.help or None
        command.add_arguments(sub.add_parser(name, help=help_text, description=command.description or help_text))
    return p


def commands_of(plugins: Any = None) -> dict:
    """Registered name -> Command instance; a command that cannot be loaded is one warning line."""
    if plugins is None:
        from rlengine.plugin.manager import build_plugins

        plugins = build_plugins()
    out = {}
    for entry in plugins.registries.commands:
        try:
            out[entry.name] = entry.obj()
        except RLEngineError as exc:
            print(f"rlengine: warning: {exc}", file=sys.stderr)
    return out


def main(argv: Optional[Sequence[str]] = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    early, _ = global_parser(add_help=False).parse_known_args(words)
    if early.version:
        from rlengine import __version__

        print(f"rlengine {__version__}")
        return 0
    try:
        from rlengine.plugin.manager import build_plugins

        plugins = build_plugins(disabled=early.disable_plugin)
        commands = commands_of(plugins)
        full = parser(commands)
        args = full.parse_args(words)
        if args.command is None:
            full.print_help()
            return 2
        args.plugins, args.argv = plugins, words
        return commands[args.command].run(args)
    except TrainingInterrupted as exc:  # SIGINT / SIGTERM: a checkpoint was written first
        print(f"rlengine: {exc}; resume with: {resume_command(words, exc.root_dir)}", file=sys.stderr)
        return 128 + exc.signal_number  # the shell's convention: 130 for SIGINT, 143 for SIGTERM
    except RLEngineError as exc:
        if early.debug:
            traceback.print_exc()
        print(f"rlengine: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("rlengine: interrupted", file=sys.stderr)
        return 130


def resume_command(argv: Sequence[str], root_dir: str) -> str:
    """The command line that continues an interrupted run: the same one, with its root dir."""
    import shlex

    words = list(argv)
    if not any(w == "--root-dir" or w.startswith(("--root-dir=", "train.root_dir=")) for w in words):
        words += ["--root-dir", root_dir]
    return shlex.join(["rlengine", *words])


if __name__ == "__main__":
    sys.exit(main())
