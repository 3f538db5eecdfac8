"""A command that extends another (``Command.extends``) adds its flags to that command's parser, and its
``prepare`` sees them before that command runs; it is no subcommand of its own."""

from __future__ import annotations

import argparse

from rlengine import cli
from rlengine.api.command import Command


class Hello(Command):
    help = "say hello"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--name", default="world")

    def run(self, args: argparse.Namespace) -> int:
        return 0


class Loud(Command):
    help = "say it loud"
    extends = "hello"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--loud", action="store_true")

    def prepare(self, args: argparse.Namespace) -> None:
        args.name = args.name.upper() if args.loud else args.name


def test_an_extension_adds_its_flags_to_the_command_it_extends_and_is_no_command_itself():
    parser = cli.parser({"hello": Hello(), "loud": Loud(), "orphan": type("Orphan", (Loud,), {"extends": "gone"})()})
    args = parser.parse_args(["hello", "--name", "ann", "--loud"])
    assert args.command == "hello" and args.loud is True
    Loud().prepare(args)
    assert args.name == "ANN"
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert sorted(subparsers.choices) == ["hello"]  # neither the extension nor one of a missing command
