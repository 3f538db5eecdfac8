"""The ``rlengine`` command line: global options, then one subcommand per registered command.

Commands are plugins (``rlengine_register_commands``): the core registers
``train`` and ``plugins``; ``rlengine-tools`` adds ``eval``, ``play``,
``export`` and ``plot``. The plugin manager is built before parsing so that
``--help`` lists them all; registrations are lazy references, so neither it
nor ``--version`` imports TensorFlow. Every :class:`rlengine.RLEngineError`
becomes one ``rlengine: error:`` line and exit status 2; so does any other
exception (the last resort: what, its type and the engine or plugin code it
came from), and ``--debug`` shows the traceback. Two failures (an
environment error that ended a run, then a ``train_end`` hook that raised)
are two lines, the first failure first.
"""

from __future__ import annotations

import sys
from types import TracebackType


def _interrupted_while_importing(kind: "type[BaseException]", value: BaseException, tb: "TracebackType | None") -> None:
    """Ctrl-C while this module's imports run (before :func:`main` can catch it) is one line too."""
    if issubclass(kind, KeyboardInterrupt):
        print("rlengine: interrupted", file=sys.stderr)  # Python still exits by SIGINT: status 130 in a shell
    else:
        _previous_excepthook(kind, value, tb)


_previous_excepthook = sys.excepthook
if __name__ == "__main__" or sys.argv[0].replace("\\", "/").rsplit("/", 1)[-1] == "rlengine":  # the command only
    sys.excepthook = _interrupted_while_importing

import argparse  # noqa: E402  (after the hook: an interrupt while importing is one line)
import faulthandler  # noqa: E402
import re  # noqa: E402
import traceback  # noqa: E402
from typing import Any, NoReturn, Optional, Sequence  # noqa: E402

from rlengine.errors import (  # noqa: E402
    RLEngineError,
    TrainingInterrupted,
    close_matches,
    earlier_failures,
    unexpected_error_line,
)
from rlengine.quiet_tensorflow import own_the_process  # noqa: E402


class OneLineParser(argparse.ArgumentParser):
    """Usage errors as one line that names the fix (``--help``), and a close match for a misspelt choice;
    the command's subparsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        choice = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if choice is not None:
            message += close_matches(choice[1], re.findall(r"'([^']*)'", choice[2]))
        self.exit(2, f"{self.prog}: error: {message} (see: {self.prog} --help)\n")


def global_parser(add_help: bool = True) -> argparse.ArgumentParser:
    p = OneLineParser(prog="rlengine", add_help=add_help,
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
    commands = commands_of() if commands is None else commands
    parsers = {}
    for name, command in sorted(commands.items()):
        if not command.extends:
            help_text = command.help or None
            parsers[name] = sub.add_parser(name, help=help_text, description=command.description or help_text)
            command.add_arguments(parsers[name])
    for name, command in sorted(commands.items()):  # after: their flags come below the command's own
        if command.extends in parsers:
            command.add_arguments(parsers[command.extends].add_argument_group(f"{name} ({command.help})"))
    return p


def commands_of(plugins: Any = None) -> dict:
    """Registered name -> Command instance; a command that cannot be loaded is one warning line."""
    if plugins is None:
        from rlengine.plugin.manager import build_plugins

        plugins = build_plugins()
    out = {}
    for entry in plugins.registries.commands:
        try:  # get: a name two plugins register is left out, with the line naming both
            out[entry.name] = plugins.registries.commands.get(entry.name).obj()
        except RLEngineError as exc:
            print(f"rlengine: warning: {exc}", file=sys.stderr)
    return out


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command ``argv`` (default: this process's arguments) and return its exit status."""
    if argv is not None:  # called from a program (tests, a notebook): its process is not ours to tune
        return _main(list(argv))
    own_the_process()  # TensorFlow's objects are then frozen once imported: no collection walks them again,
    # the interpreter's last one included (docs/performance.md). The script a legacy editable install writes
    # names this distribution in __main__.__requires__; pkg_resources, once anything imports it (pygame
    # does), would then check every dependency of every installed distribution, and stop the run on a
    # package whose name it spells otherwise (backports.strenum, which ai-edge-litert needs)
    vars(sys.modules["__main__"]).pop("__requires__", None)
    return _main(sys.argv[1:])


def _main(words: list) -> int:
    dump_python_stack_on_crash()
    debug = "--debug" in words
    try:
        early, _ = global_parser(add_help=False).parse_known_args(words)
        debug = early.debug
        if early.version:
            from rlengine import __version__

            print(f"rlengine {__version__}")
            return 0
        return run_command(words, early)
    except SystemExit:  # argparse's usage errors and --help: it has printed what it wanted
        raise
    except BaseException as exc:
        return report(exc, words, debug)


def run_command(words: list, early: argparse.Namespace) -> int:
    """Build the plugins, parse the whole command line and run the command it names."""
    from rlengine.commands.terminal import say_on_a_terminal  # no TensorFlow

    say_on_a_terminal("rlengine: loading TensorFlow and the plugins")  # seconds of silence otherwise
    from rlengine.plugin.manager import build_plugins

    plugins = build_plugins(disabled=early.disable_plugin)
    commands = commands_of(plugins)
    full = parser(commands)
    args, unknown = full.parse_known_args(words)
    if unknown:  # named with the command's own --help, where argparse would name the top one's
        full.exit(2, f"rlengine: error: unrecognized arguments: {' '.join(unknown)} "
                     f"(see: rlengine {args.command + ' ' if args.command else ''}--help)\n")
    if args.command is None:
        full.print_help()
        return 2
    args.plugins, args.argv = plugins, words
    for command in commands.values():
        if command.extends == args.command:
            command.prepare(args)
    return commands[args.command].run(args)


def report(error: BaseException, words: Sequence[str], debug: bool) -> int:
    """Print ``error`` as one line (after any failure it interrupted, one line each); the exit status.

    The status is the first failure's: 2 for an error, 128 + the signal's
    number for an interruption (130 for Ctrl-C, 143 for SIGTERM).
    """
    try:
        if debug and not isinstance(error, (KeyboardInterrupt, TrainingInterrupted)):
            traceback.print_exception(error)
        first, *later = [*earlier_failures(error), error]
        status = _report_first(first, words)
        for then in later:
            print(f"rlengine: error: then, while handling that: {describe(then)}", file=sys.stderr)
        return status
    except KeyboardInterrupt:  # Ctrl-C again while reporting: the short answer will do
        print("rlengine: interrupted", file=sys.stderr)
        return 130


def _report_first(error: BaseException, words: Sequence[str]) -> int:
    if isinstance(error, TrainingInterrupted):  # SIGINT / SIGTERM: a checkpoint was written first
        print(f"rlengine: {error}; resume with: {resume_command(words, error.root_dir)}", file=sys.stderr)
        return 128 + error.signal_number  # the shell's convention: 130 for SIGINT, 143 for SIGTERM
    if isinstance(error, KeyboardInterrupt):
        print("rlengine: interrupted", file=sys.stderr)
        return 130
    print(f"rlengine: error: {describe(error)}", file=sys.stderr)
    return 2


def describe(error: BaseException) -> str:
    """The one line for ``error``: an RLEngineError's own message, else the last resort's; then the
    engine's notes on it (``the run was checkpointed to ... first``), so they stay on that line."""
    if isinstance(error, KeyboardInterrupt):
        line = "interrupted (KeyboardInterrupt)"
    elif isinstance(error, RLEngineError):
        line = " ".join(str(error).split("\n")).strip() or type(error).__name__
    else:
        line = unexpected_error_line(error)
    notes = [n for n in getattr(error, "__notes__", None) or () if isinstance(n, str) and n.startswith("rlengine: ")]
    return "".join([line, *(f"; {' '.join(n.removeprefix('rlengine: ').split())}" for n in notes)])


def dump_python_stack_on_crash() -> None:
    """Enable :mod:`faulthandler`: a segfault in an in-process environment (or any native code) then
    prints the Python stack of every thread to stderr, naming the code that crashed, instead of dying
    silently with status 139. Nothing can continue the process after that; see docs/troubleshooting.md."""
    if faulthandler.is_enabled():
        return
    try:
        faulthandler.enable(file=sys.__stderr__ or sys.stderr)
    except (AttributeError, ValueError, OSError):  # no usable stderr (embedded, closed): nothing to print to
        pass


def resume_command(argv: Sequence[str], root_dir: str) -> str:
    """The command line that continues an interrupted run: the same one, with its root dir."""
    import shlex

    words = list(argv)
    if not any(w == "--root-dir" or w.startswith(("--root-dir=", "train.root_dir=")) for w in words):
        words += ["--root-dir", root_dir]
    return shlex.join(["rlengine", *words])


if __name__ == "__main__":
    sys.exit(main())
