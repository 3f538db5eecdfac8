"""Helpers for tests that pip-install a plugin package into a directory and run Python from there.

A ``pip install --target`` directory on ``PYTHONPATH`` is what a user's
site-packages looks like to rlengine: the distribution's metadata and entry
points are found there, and nothing is installed into the test's own
environment. Imported by the tests as ``tests.plugin_packages``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from rlengine.plugin.manager import DISABLE_ENV, TRACE_ENV


def pip_install(package: Path, target: Path) -> None:
    """Install ``package`` (a source directory) into ``target``: no dependencies, no index, no build isolation."""
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--no-index", "--disable-pip-version-check", "--target", str(target), str(package)],
        check=True, capture_output=True, text=True, timeout=180,
    )


def run_python(*args: str, pythonpath: list[Path], cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    """``python *args`` with ``pythonpath`` in front of the caller's, and no rlengine plugin switches inherited."""
    env = {k: v for k, v in os.environ.items() if k not in (DISABLE_ENV, TRACE_ENV, "RLENGINE_DEBUG")}
    env["PYTHONPATH"] = os.pathsep.join([*map(str, pythonpath), *filter(None, [os.environ.get("PYTHONPATH")])])
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=timeout)


def run_rlengine(*args: str, pythonpath: list[Path], cwd: Path) -> subprocess.CompletedProcess:
    """The ``rlengine`` command line, as :func:`run_python` runs it."""
    return run_python("-m", "rlengine.cli", *args, pythonpath=pythonpath, cwd=cwd)


def cli_with_testing_kit(announce: str, imports: str = "") -> str:
    """A script running ``rlengine``'s CLI with the testing kit and ``announce`` loaded in-process.

    ``announce`` is the source of a plugin class named ``Announce`` (its hooks tell
    the test how far the run got); ``imports`` are extra import lines it needs.
    The counting env and the toy algorithm then train from the command line.
    """
    return (textwrap.dedent("""
        import sys
        from rlengine import cli, hookimpl, testing
        from rlengine.plugin import manager
        """) + textwrap.dedent(imports) + "\n" + textwrap.dedent(announce) + textwrap.dedent("""
        real_build_plugins = manager.build_plugins

        def build_plugins(disabled=(), extra_plugins=(), load_entry_points=True):
            extra = [("testing", testing.testing_plugin()), ("announce", Announce()), *extra_plugins]
            return real_build_plugins(disabled=disabled, extra_plugins=extra, load_entry_points=load_entry_points)

        manager.build_plugins = build_plugins
        sys.exit(cli.main())
        """))
