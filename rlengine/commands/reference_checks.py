"""A registered ``"module:Class"`` string checked without importing its module.

``rlengine plugins --check`` holds every registration to what it can check
without TensorFlow: the module a reference names must be installed, and the
name after the colon must be a Python name the module's source defines
(a class, a function, an assignment or an import at its top level). Nothing
is imported: the module is found as the import system would find it, its
parent packages included, without running any of them, and its source is
parsed, not run. A module that makes names at run time (``__getattr__``,
``from x import *``) or has no source to read is taken at its word; the
classes themselves are imported and held to their kind's base class by
``--check --build`` (:mod:`rlengine.commands.plugin_checks`).
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from importlib.machinery import ModuleSpec
from typing import Optional


def reference_problem(reference: str) -> str:
    """Why ``reference`` (``"module:attribute"``) cannot be imported, found without importing it; '' if it may."""
    module, _, attribute = reference.partition(":")
    parts = attribute.split(".") if attribute else []
    if not module or not all(part.isidentifier() for part in module.split(".")):
        return f"{module!r} is not a Python module name"
    if not parts:
        return "it names no class after the ':'"
    invalid = [part for part in parts if not part.isidentifier()]
    if invalid:
        return f"{invalid[0]!r} is not a Python name"
    loaded = sys.modules.get(module)
    if loaded is not None:  # imported already (a plugin's entry point module, the core): look, running nothing
        defined = vars(loaded)  # not hasattr: a module's __getattr__ may import what this check must not
        known = parts[0] in defined or "__getattr__" in defined
        if known or find_without_importing(f"{module}.{parts[0]}") is not None:
            return ""
        return _defines_no(module, getattr(loaded, "__file__", None), parts[0])
    spec = find_without_importing(module)
    if spec is None:
        return f"no module {module!r} is installed"
    names = top_level_names(spec)
    if names is None or parts[0] in names or find_without_importing(f"{module}.{parts[0]}") is not None:
        return ""
    return _defines_no(module, spec.origin, parts[0])


def _defines_no(module: str, origin: Optional[str], name: str) -> str:
    """The one wording, whether the module was imported already or only found (the check's answer must not
    depend on what the process happened to import before)."""
    where = f" ({origin})" if origin else ""
    return f"module {module!r}{where} defines no {name!r}"


def find_without_importing(name: str) -> Optional[ModuleSpec]:
    """The spec of module ``name`` as an import would find it, with no module (not even a parent) run."""
    parent_name, _, _ = name.rpartition(".")
    if not parent_name or parent_name in sys.modules:
        try:
            return importlib.util.find_spec(name)  # finds, imports nothing: the parent is loaded or there is none
        except (ImportError, ValueError):
            return None
    parent = find_without_importing(parent_name)
    if parent is None or parent.submodule_search_locations is None:  # no such package, or a module, not one
        return None
    for finder in sys.meta_path:  # the finders an import asks, in its order, with the parent package's path
        find_spec = getattr(finder, "find_spec", None)
        try:
            spec = find_spec(name, list(parent.submodule_search_locations)) if find_spec is not None else None
        except (ImportError, ValueError):
            spec = None
        if spec is not None:
            return spec
    return None


def top_level_names(spec: ModuleSpec) -> Optional[set]:
    """The names the module's source binds at its top level; None when they cannot be known without running it."""
    if not spec.origin or not spec.origin.endswith(".py"):
        return None
    try:
        with open(spec.origin, "rb") as source:
            tree = ast.parse(source.read(), spec.origin)
    except (OSError, SyntaxError, ValueError):  # a syntax error shows when the class is imported
        return None
    names: set = set()
    for statement in _top_level(tree.body):
        if isinstance(statement, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(statement.name)
        elif isinstance(statement, (ast.Import, ast.ImportFrom)):
            for alias in statement.names:
                if alias.name == "*":
                    return None
                names.add(alias.asname or alias.name.split(".")[0])
        else:
            names.update(node.id for node in ast.walk(statement)
                         if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store))
    return None if "__getattr__" in names else names


#: The blocks whose bodies run at import when the module does.
_BLOCKS = tuple(getattr(ast, name) for name in ("If", "Try", "TryStar", "With", "ExceptHandler") if hasattr(ast, name))


def _top_level(body: list) -> list:
    """The simple statements run at import, those inside top-level ``if``, ``try`` and ``with`` blocks included."""
    found = []
    for statement in body:
        if not isinstance(statement, _BLOCKS):
            found.append(statement)
            continue
        for block in ("body", "orelse", "finalbody", "handlers"):
            found.extend(_top_level(getattr(statement, block, [])))
    return found
