"""The first-party plugin packages, read from ``plugins/*/setup.py``: the one list the tests use.

A package is a directory of ``plugins/`` with a ``setup.py`` that declares an
``rlengine`` entry point (the template, rendered by cookiecutter, has none).
``tests/test_first_party.py`` checks that the lists outside the tests
(``.importlinter``, ``tox.ini``, ``requirements.txt``) name the same packages.
Imported by the tests as ``tests.first_party``.
"""

from __future__ import annotations

import ast
import importlib.metadata as md
import importlib.util
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]


class FirstPartyPackage(NamedTuple):
    directory: str  # under plugins/; also its tox env
    entry_point: str  # its name in the "rlengine" entry-point group, e.g. "gym"
    package: str  # the import package, e.g. "rlengine_gym"


def _setup_arguments(setup_py: Path) -> dict:
    """The literal ``entry_points`` argument of the ``setup(...)`` call in ``setup_py``."""
    tree = ast.parse(setup_py.read_text(), str(setup_py))
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "setup"]
    assert len(calls) == 1, f"{setup_py}: expected one setup(...) call, found {len(calls)}"
    return {k.arg: ast.literal_eval(k.value) for k in calls[0].keywords if k.arg == "entry_points"}


def _read(setup_py: Path) -> FirstPartyPackage:
    arguments = _setup_arguments(setup_py)
    entries = arguments.get("entry_points", {}).get("rlengine", [])
    assert len(entries) == 1, f"{setup_py}: expected one 'rlengine' entry point, found {entries}"
    name, module = (part.strip() for part in entries[0].split("="))
    return FirstPartyPackage(setup_py.parent.name, name, module.split(".")[0])


#: Every first-party plugin package, in the order of their directories.
PACKAGES = tuple(_read(path) for path in sorted(ROOT.glob("plugins/*/setup.py")))


def installed() -> tuple[FirstPartyPackage, ...]:
    """The packages this environment can import and whose entry point it declares."""
    declared = {ep.name for ep in md.entry_points(group="rlengine")}
    return tuple(p for p in PACKAGES if p.entry_point in declared and importlib.util.find_spec(p.package) is not None)
