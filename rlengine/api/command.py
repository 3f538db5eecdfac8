"""The interface of a command plugin: a subcommand of the ``rlengine`` CLI.

The CLI builds its parser from every registered command, then runs the one
the user named::

    command = cls()                          # once per CLI call
    command.add_arguments(subparser)         # argparse, the CLI library the core uses
    status = command.run(args)               # the exit status

``args`` also holds the global options (``args.debug``,
``args.disable_plugin``), the plugin manager the CLI built (``args.plugins``:
pass it on, e.g. ``rlengine.Engine(config, plugins=args.plugins)``, rather
than loading every plugin again) and the command line (``args.argv``).

Register one with::

    @rlengine.hookimpl
    def rlengine_register_commands(register):
        register("hello", Hello)             # rlengine hello ...

A command may instead add flags to another one (``extends = "train"``):
its ``add_arguments`` gets that command's parser, and its :meth:`Command.prepare`
sees the parsed flags before that command runs (the ray plugin's
``rlengine train --seeds 0-3 --ray`` sets where the seeds run this way).

Keep the module that defines a command cheap to import (no TensorFlow at
the top): ``rlengine --help`` imports every command to list it. Import what
``run`` needs inside ``run``. Errors meant for the user are
:class:`rlengine.RLEngineError`: the CLI prints them as one line and exits 2.
"""

from __future__ import annotations

import argparse
from typing import ClassVar


class Command:
    """Base class of commands (see the module docstring for the calling loop)."""

    #: One line for ``rlengine --help``.
    help: ClassVar[str] = ""
    #: A paragraph for ``rlengine NAME --help`` (default: ``help``).
    description: ClassVar[str] = ""
    #: Another command's name: this one adds flags to it rather than being a command of its own.
    extends: ClassVar[str] = ""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Declare the command's arguments on its own subparser."""

    def run(self, args: argparse.Namespace) -> int:
        """Do the work; return the exit status (0: success)."""
        raise NotImplementedError

    def prepare(self, args: argparse.Namespace) -> None:
        """(``extends`` only) Read this command's flags in ``args``, and set what the extended command takes."""
