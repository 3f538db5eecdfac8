"""Plugins use only the public API, and declare which API version they need."""

import ast
import glob
import os

import pytest

import rlengine
from rlengine.plugin.manager import build_plugins
from rlengine.plugin.markers import API_VERSION

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
PLUGIN_SOURCES = [p for p in glob.glob(os.path.join(ROOT, "plugins", "*", "rlengine_*", "**", "*.py"), recursive=True)]


def _core_imports(path):
    tree = ast.parse(open(path).read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "rlengine":
            yield node.lineno, node.module
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "rlengine":
                    yield node.lineno, alias.name


#: What plugins may import of the core: the facade and the kits pipeline and plugin authors build on.
PUBLIC = ("rlengine", "rlengine.api", "rlengine.collect", "rlengine.learn", "rlengine.testing")


def _public(module: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in PUBLIC)


def test_plugin_packages_import_only_the_public_core_modules():
    assert PLUGIN_SOURCES, "no plugin sources found"
    private = [f"{os.path.relpath(path, ROOT)}:{line} imports {module}"
               for path in PLUGIN_SOURCES for line, module in _core_imports(path) if not _public(module)]
    assert not private, f"plugins must import only {', '.join(PUBLIC)}:\n" + "\n".join(private)


def test_public_names_exist():
    for name in rlengine.__all__:
        assert getattr(rlengine, name) is not None


class FuturePlugin:
    RLENGINE_API_VERSION = "2.0"


class NewerMinorPlugin:
    RLENGINE_API_VERSION = "1.9"


class CompatiblePlugin:
    RLENGINE_API_VERSION = "1.0"


class MalformedPlugin:
    RLENGINE_API_VERSION = "one"


@pytest.mark.parametrize("plugin, message", [
    (FuturePlugin(), "needs rlengine API 2.0, but this rlengine provides API " + API_VERSION),
    (NewerMinorPlugin(), "needs rlengine API 1.9, but this rlengine provides API " + API_VERSION),
    (MalformedPlugin(), "declares RLENGINE_API_VERSION = 'one'"),
])
def test_incompatible_plugin_is_refused_in_one_line_naming_it_and_the_versions(plugin, message):
    plugins = build_plugins(load_entry_points=False, extra_plugins=[("mine", plugin)])
    (failure,) = plugins.failures
    assert failure.message.startswith("plugin 'mine' (in-process)") and message in failure.message
    assert "\n" not in failure.message
    assert "mine" not in [i.name for i in plugins.infos]


def test_compatible_plugin_loads():
    plugins = build_plugins(load_entry_points=False, extra_plugins=[("mine", CompatiblePlugin())])
    assert not plugins.failures and [i.name for i in plugins.infos if i.distribution != "rlengine"] == ["mine"]
