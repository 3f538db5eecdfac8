"""Reference pages generated from the code, so the docs cannot drift from it.

``python -m devtools.docgen`` rewrites ``docs/hooks.md`` (from the hook
specs), ``docs/config-reference.md`` (from the attrs config classes of the
engine and of every first-party plugin) and ``docs/cli.md`` (from the
argparse parser). Tests fail when a committed page differs from what the
code says.
"""

from __future__ import annotations

import argparse
import inspect
import os
import re
import sys
import textwrap
from typing import Callable

from devtools.docgen_config import config_reference, table_cell
from rlengine.plugin import hookspecs

DOCS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs")
HOOKS_PAGE = os.path.join(DOCS_DIR, "hooks.md")
CONFIG_PAGE = os.path.join(DOCS_DIR, "config-reference.md")
CLI_PAGE = os.path.join(DOCS_DIR, "cli.md")
USAGE_WIDTH = 100  # fixed, so the page does not depend on the terminal that generated it


# -- hooks -----------------------------------------------------------------
def hook_signature(name: str) -> str:
    """``name(arg: Type, ...) -> Return`` as the hook spec declares it."""
    return name + str(inspect.signature(getattr(hookspecs, name))).replace("'", "")


def hook_section(name: str) -> str:
    doc = markdown(inspect.getdoc(getattr(hookspecs, name)) or "")
    return "\n".join([f"## {name}", "", "```python", hook_signature(name), "```", "", doc, ""])


def markdown(docstring: str) -> str:
    """A docstring's reStructuredText roles and literals as Markdown code spans."""
    return re.sub(r":\w+:`([^`]+)`", r"`\1`", docstring).replace("``", "`")


def hook_reference() -> str:
    lines = ["# Hook reference", "",
             "Every hook rlengine calls, generated from `rlengine/plugin/hookspecs.py` by",
             "`python -m devtools.docgen`. Implement one with `@rlengine.hookimpl` in the module",
             "your `rlengine` entry point names; an implementation may take any subset of the arguments.",
             "", *hook_overview(), ""]
    return "\n".join(lines + [hook_section(name) for name in hookspecs.hook_names()])


def hook_overview() -> list[str]:
    """The hook specs' module docstring (when each kind of hook runs, and in which order) as Markdown."""
    doc = inspect.getdoc(hookspecs) or ""
    text, _, block = doc.partition("::")
    paragraphs = text.split("\n\n")[1:]  # the first line is the module's title
    lines = ["## When hooks run", "", *markdown("\n\n".join(paragraphs)).rstrip().splitlines()]
    if block.strip():
        lines[-1] += ":"
        lines += ["", "```text", textwrap.dedent(block.strip("\n")), "```"]
    return lines


# -- command line ----------------------------------------------------------
def cli_reference(parser: argparse.ArgumentParser | None = None) -> str:
    """Every command, subcommand and flag of ``rlengine``, walked from the argparse parser."""
    if parser is None:
        from rlengine.cli import parser as make_parser

        parser = make_parser()
    lines = ["# CLI reference", "",
             "Every command and flag of `rlengine`, generated from `rlengine.cli.parser()` by",
             "`python -m devtools.docgen`. `rlengine COMMAND --help` prints the same.", ""]
    for prog, sub, summary in walk_parsers(parser):
        lines += _parser_section(prog, sub, summary)
    return "\n".join(lines)


def walk_parsers(parser: argparse.ArgumentParser, summary: str = "") -> list[tuple[str, argparse.ArgumentParser, str]]:
    """``(prog, parser, one-line help)`` of ``parser`` and of every subparser below it, depth first."""
    out = [(parser.prog, parser, summary)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                out += walk_parsers(sub, helps.get(name, ""))
    return out


def _parser_section(prog: str, parser: argparse.ArgumentParser, summary: str) -> list[str]:
    formatter = argparse.HelpFormatter(prog, width=USAGE_WIDTH)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups, prefix="")
    lines = [f"## `{prog}`", ""]
    about = summary or parser.description or ""
    if about:
        lines += [_sentence(about), ""]
    lines += ["```", formatter.format_help().strip(), "```", ""]
    rows = [_argument_row(a) for a in parser._actions if not isinstance(a, argparse._HelpAction)]
    rows = [r for r in rows if r]
    if rows:
        lines += ["| argument | default | meaning |", "|---|---|---|", *rows, ""]
    return lines


def _argument_row(action: argparse.Action) -> str:
    if isinstance(action, argparse._SubParsersAction):
        return "| `COMMAND` |  | one of: " + ", ".join(f"`{c}`" for c in action.choices) + " |"
    if action.option_strings:
        name = ", ".join(action.option_strings)
        if action.nargs != 0:
            name += " " + _metavar(action, action.dest.upper())
    else:
        name = _metavar(action, action.dest)
        if action.nargs == "?":
            name = f"[{name}]"
        elif action.nargs in ("*", "+"):
            name += " ..."
    repeatable = isinstance(action, argparse._AppendAction) and "repeatable" not in (action.help or "")
    repeat = " (repeatable)" if repeatable else ""
    return f"| {_code(name)} | {_default(action)} | {table_cell(action.help or '')}{repeat} |"


def _metavar(action: argparse.Action, fallback: str) -> str:
    metavar = action.metavar or fallback  # a tuple names each of several values
    return metavar if isinstance(metavar, str) else " ".join(metavar)


def _default(action: argparse.Action) -> str:
    value = action.default
    if action.required and action.option_strings:
        return "required"
    if value is None or value is False or value == [] or value == argparse.SUPPRESS:
        return ""
    if action.choices and not isinstance(action, argparse._SubParsersAction):
        return f"`{value}` (one of {', '.join(map(str, action.choices))})"
    return f"`{value}`"


def _code(text: str) -> str:
    """Code in a table cell; a pipe cannot be escaped inside backticks, so such text gets <code>."""
    if "|" in text:
        return "<code>" + text.replace("&", "&amp;").replace("<", "&lt;").replace("|", "&#124;") + "</code>"
    return f"`{text}`"


def _sentence(text: str) -> str:
    text = text.strip()
    return text[0].upper() + text[1:] + ("" if text.endswith(".") else ".")


# -- writing ---------------------------------------------------------------
def pages() -> dict[str, Callable[[], str]]:
    """Each generated page and the function that renders it."""
    return {HOOKS_PAGE: hook_reference, CONFIG_PAGE: config_reference, CLI_PAGE: cli_reference}


def main() -> int:
    for path, render in pages().items():
        with open(path, "w") as f:
            f.write(render())
        print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
