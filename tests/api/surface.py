"""What of rlengine is public, read from the code, and the checks that hold plugins and docs/plugins.md to it.

Public are the modules of :data:`BY_NAMES`, each by its ``__all__``, and every module of the kits
(:data:`KITS`), module by module. Nothing else of the core may be imported by a plugin or a docs example,
and docs/plugins.md names every public module and every name of the facade. The checks take their
inputs as arguments, so a test can hand them a module or a name that does not exist and see them fail.
"""

from __future__ import annotations

import ast
import importlib
import os
import re

from rlengine.lazy import MOVED_MODULES

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLUGINS_PAGE = os.path.join(ROOT, "docs", "plugins.md")
#: Modules public by their ``__all__``: the facade first.
BY_NAMES = ("rlengine", "rlengine.api", "rlengine.errors", "rlengine.lazy")
#: Packages public module by module: the collection, learning and test kits.
KITS = ("rlengine.collect", "rlengine.learn", "rlengine.testing")


def kit_modules() -> set[str]:
    """Every module of the kits (packages included), found on disk: none is imported."""
    found = set()
    for kit in KITS:
        top = os.path.join(ROOT, *kit.split("."))
        for directory, _, files in os.walk(top):
            package = os.path.relpath(directory, ROOT).replace(os.sep, ".")
            found |= {package if f == "__init__.py" else f"{package}.{f[:-3]}" for f in files if f.endswith(".py")}
    return {m for m in found if not any(part.startswith("_") for part in m.split("."))}


def public_names() -> dict[str, list[str]]:
    """Module -> its ``__all__``, for the modules public by their names."""
    return {name: list(importlib.import_module(name).__all__) for name in BY_NAMES}


def private_reference(module: str, name: str, names: dict[str, list[str]], modules: set[str]) -> bool:
    """Whether ``from module import name`` (``name`` empty: ``import module``) reaches past the public core."""
    if module.split(".")[0] != "rlengine":
        return False
    if module in names:
        return bool(name) and name not in names[module] and f"{module}.{name}" not in modules
    return module not in modules or name.startswith("_")


def core_references(tree: ast.AST) -> list[tuple[int, str, str]]:
    """``(line, module, name)`` of every import and every ``rlengine.X`` attribute in ``tree``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, "") for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found += [(node.lineno, node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "rlengine":
            found.append((node.lineno, "rlengine", node.attr))
    return found


def private_imports(sources: dict[str, str], names: dict[str, list[str]], modules: set[str]) -> list[str]:
    """``"<path>:<line> imports <module>[:<name>]"`` for each reference of ``sources`` (path -> code) past the
    public core."""
    return [f"{path}:{line} imports {module}{':' + name if name else ''}"
            for path, source in sources.items() for line, module, name in core_references(ast.parse(source, path))
            if private_reference(module, name, names, modules)]


# -- what docs/plugins.md says is public ---------------------------------------------------------
def _section(page: str, heading: str) -> str:
    return page.split(f"\n{heading}\n", 1)[1].split("\n#", 1)[0]


def documented(page: str) -> tuple[set[str], set[str]]:
    """``(names, modules)`` the page documents: the names its "Rules" open with (the facade's, then its
    errors), and every ``rlengine.*`` module (or ``module.name``) its "Public modules" list names."""
    rules = _section(page, "## Rules").strip().split("\n\n")
    names = set(re.findall(r"`(\w+)`", rules[0] + rules[1])) - {"rlengine", "__all__"}
    modules = set(re.findall(r"`(rlengine(?:\.\w+)*)`", _section(page, "### Public modules")))
    return names, modules


def undocumented(page: str, names: dict[str, list[str]], modules: set[str]) -> list[str]:
    """What is public but not documented on ``page``, or documented but not public, one line each."""
    facade, named = documented(page)
    problems = [f"rlengine.{n} is public, and not listed in the Rules of docs/plugins.md"
                for n in sorted(set(names["rlengine"]) - facade)]
    problems += [f"docs/plugins.md lists {n}, which rlengine does not export" for n in sorted(facade - set(names["rlengine"]))]
    problems += [f"{m} is public, and not in the Public modules of docs/plugins.md"
                 for m in sorted({*names, *modules} - named)]
    problems += [f"{module}.{n} is public, and neither exported by rlengine nor in the Public modules of "
                 "docs/plugins.md" for module, exported in names.items() if module != "rlengine"
                 for n in sorted(set(exported) - set(names["rlengine"])) if f"{module}.{n}" not in named]
    stale = {m for m in named if m not in names and m not in modules and m.rpartition(".")[0] not in names
             and m not in MOVED_MODULES}
    problems += [f"docs/plugins.md names {m} as a public module: no such module is public" for m in sorted(stale)]
    return problems


def read(path: str) -> str:
    with open(path) as f:
        return f.read()
