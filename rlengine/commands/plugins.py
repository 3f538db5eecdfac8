"""``rlengine plugins``: what is loaded, from which distribution, and what each plugin registers."""

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

    def run(self, args: argparse.Namespace) -> int:
        plugins = getattr(args, "plugins", None)
        if plugins is None:
            from rlengine.plugin.manager import build_plugins

            plugins = build_plugins(disabled=args.disable_plugin)
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
