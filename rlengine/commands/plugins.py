"""``rlengine plugins``: what is loaded, from which distribution, and what each plugin registers.

``rlengine plugins --check`` runs the plugin contract checks that need no TensorFlow on every
installed plugin (:mod:`rlengine.commands.plugin_checks`) and measures what each adds to every
command's start (:mod:`rlengine.commands.import_times`); ``--check --build`` adds the checks that
import the registered classes and build encoders and graph environments.
"""

from __future__ import annotations

import argparse
import json
import sys

from rlengine.api.command import Command
from rlengine.plugin.registry import KINDS


class ListPlugins(Command):
    help = "list loaded plugins and what they register"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--json", action="store_true", help="print a JSON array")
        parser.add_argument("--check", action="store_true",
                            help="check every installed plugin against its contracts and time its import: one "
                                 "line per problem, exit status 1 when a contract is broken")
        parser.add_argument("--build", action="store_true",
                            help="with --check: also import every registered class and build every encoder and "
                                 "graph environment (imports TensorFlow, so it takes seconds)")

    def run(self, args: argparse.Namespace) -> int:
        plugins = getattr(args, "plugins", None)
        if plugins is None:
            from rlengine.plugin.manager import build_plugins

            plugins = build_plugins(disabled=args.disable_plugin)
        if args.check or getattr(args, "build", False):
            return check_plugins(plugins, build=getattr(args, "build", False))
        rows = [{"name": i.name, "distribution": i.distribution, "version": i.version,
                 **plugins.registered_by(i.name)} for i in plugins.infos]
        if args.json:
            failed = [{"name": f.name, "distribution": f.distribution, "version": f.version, "error": f.message}
                      for f in plugins.failures]
            print(json.dumps(rows + failed, indent=2))
        else:
            print_plugin_table(rows)
        for notice in plugins.notices:
            print(f"rlengine: warning: {notice}", file=sys.stderr)
        for failure in plugins.failures:
            print(f"rlengine: error: {failure.message}", file=sys.stderr)
            if args.debug:
                print(failure.traceback, file=sys.stderr)
        return 1 if plugins.failures else 0


def check_plugins(plugins, build: bool = False) -> int:
    """``rlengine plugins --check [--build]``: the import times on stdout, one line per problem on stderr, then
    what was not checked; the status."""
    from rlengine.commands import import_times
    from rlengine.commands.plugin_checks import BUILD_CHECKS, problems

    # first, in a process of its own: with --build this process then imports TensorFlow
    times = import_times.measure(plugins.recipe.disabled if plugins.recipe is not None else ())
    errors, warnings = 0, print_import_times(times)
    for problem in problems(plugins, build=build):  # each line as soon as it is found
        print(f"rlengine: {'error' if problem.error else 'warning'}: {problem.line}", file=sys.stderr, flush=True)
        errors, warnings = errors + problem.error, warnings + (not problem.error)
    print(f"{len(plugins.infos)} plugins checked: {errors} broken contract(s), {warnings} warning(s)")
    if not build:
        print(f"Not checked: {'; '.join(BUILD_CHECKS)}. `rlengine plugins --check --build` checks them too "
              "(it imports TensorFlow, so it takes seconds).")
    return 1 if errors else 0


def print_import_times(times: list) -> int:
    """The import time each plugin adds to every command, then the slow ones named; how many are slow."""
    from rlengine.commands.import_times import SLOW_SECONDS

    width = max([len(t.name) for t in times] + [6])
    print(f"{'plugin'.ljust(width)}  import (added to every rlengine command)")
    for t in times:
        figure = "could not be imported" if t.error else f"{t.seconds * 1000:.0f} ms"
        print(f"{t.name.ljust(width)}  {figure}")
    for t in times:
        if t.slow:
            brought = f", importing {', '.join(t.brought)}" if t.brought else ""
            print(f"rlengine: warning: plugin {t.name!r} ({t.distribution}) is slow to import: it adds "
                  f"{t.seconds:.2f} s to every rlengine command, --help included{brought} (slow: more than "
                  f"{SLOW_SECONDS:g} s); import heavy packages inside the functions that need them, and register "
                  "classes as 'module:Class' strings", file=sys.stderr)
    return sum(t.slow for t in times)


#: A kind with more names than this is shown as a count (``presets: 24``): ``--json`` lists every name.
MAX_NAMES_SHOWN = 8


def print_plugin_table(rows: list) -> None:
    table = [("plugin", "distribution", "version", "registers")]
    for r in rows:
        registers = "; ".join(f"{k.plural}: {_names(r[k.plural])}" for k in KINDS if r[k.plural]) or "(hooks only)"
        table.append((r["name"], r["distribution"], r["version"], registers))
    widths = [max(len(row[i]) for row in table) for i in range(3)]
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row[:3], widths)) + "  " + row[3])


def _names(names: list) -> str:
    return ", ".join(names) if len(names) <= MAX_NAMES_SHOWN else f"{len(names)} (--json lists them)"
