"""The public surface is exact: plugins import only it, docs/plugins.md lists all of it, and a public module
or name that is not listed fails here. Plugins also declare which API version they need."""

import glob
import os

import pytest

import rlengine
from rlengine.plugin.manager import build_plugins
from rlengine.plugin.markers import API_VERSION
from tests.api.surface import (
    PLUGINS_PAGE,
    ROOT,
    kit_modules,
    private_imports,
    public_names,
    read,
    undocumented,
)

PLUGIN_SOURCES = glob.glob(os.path.join(ROOT, "plugins", "*", "rlengine_*", "**", "*.py"), recursive=True)


def test_plugin_packages_import_only_the_public_core():
    assert PLUGIN_SOURCES, "no plugin sources found"
    sources = {os.path.relpath(path, ROOT): read(path) for path in PLUGIN_SOURCES}
    private = private_imports(sources, public_names(), kit_modules())
    assert not private, "plugins must import only the public core (docs/plugins.md, Public modules):\n" + "\n".join(private)


def test_docs_list_exactly_the_public_modules_and_names():
    problems = undocumented(read(PLUGINS_PAGE), public_names(), kit_modules())
    assert not problems, "\n".join(problems)


def test_the_facade_exports_every_name_of_the_api_and_the_errors_and_each_exists():
    names = public_names()
    assert set(names["rlengine.api"]) | set(names["rlengine.errors"]) <= set(names["rlengine"])
    for module, exported in names.items():
        loaded = __import__(module, fromlist=["_"])
        assert all(getattr(loaded, name) is not None for name in exported), module
    assert rlengine.DamagedCheckpointError is rlengine.errors.DamagedCheckpointError


# -- the checks can fail: fed a public module or name that nothing lists --------------------------
def test_a_new_undocumented_kit_module_or_name_is_reported():
    names = public_names()
    names["rlengine"] = [*names["rlengine"], "BrandNew"]
    names["rlengine.lazy"] = [*names["rlengine.lazy"], "brand_new"]
    problems = undocumented(read(PLUGINS_PAGE), names, kit_modules() | {"rlengine.learn.brand_new"})
    assert problems == [
        "rlengine.BrandNew is public, and not listed in the Rules of docs/plugins.md",
        "rlengine.learn.brand_new is public, and not in the Public modules of docs/plugins.md",
        "rlengine.lazy.brand_new is public, and neither exported by rlengine nor in the Public modules of "
        "docs/plugins.md",
    ]


def test_a_name_or_module_the_page_lists_but_the_code_lacks_is_reported():
    page = read(PLUGINS_PAGE).replace("`hookimpl`, ", "`hookimpl`, `Gone`, ").replace(
        "`rlengine.learn.returns`", "`rlengine.learn.returns`, `rlengine.learn.gone`")
    assert undocumented(page, public_names(), kit_modules()) == [
        "docs/plugins.md lists Gone, which rlengine does not export",
        "docs/plugins.md names rlengine.learn.gone as a public module: no such module is public"]


def test_a_plugin_importing_past_the_public_core_is_reported():
    source = "\n".join(["import rlengine", "from rlengine import Engine, testing", "from rlengine.collect import stopping",
                        "from rlengine.run.build import build_components", "from rlengine import Nope",
                        "from rlengine.errors import where_raised", "import rlengine.learn.sumtree",
                        "from rlengine.collect.faults import _private", "x = rlengine.Nope2"])
    assert private_imports({"p.py": source}, public_names(), kit_modules()) == [
        "p.py:4 imports rlengine.run.build:build_components", "p.py:5 imports rlengine:Nope",
        "p.py:6 imports rlengine.errors:where_raised", "p.py:7 imports rlengine.learn.sumtree",
        "p.py:8 imports rlengine.collect.faults:_private", "p.py:9 imports rlengine:Nope2"]


class FuturePlugin:
    RLENGINE_API_VERSION = "2.0"


class NewerMinorPlugin:
    RLENGINE_API_VERSION = "1.99"


class CompatiblePlugin:
    RLENGINE_API_VERSION = "1.0"


class MalformedPlugin:
    RLENGINE_API_VERSION = "one"


@pytest.mark.parametrize("plugin, message", [
    (FuturePlugin(), "needs rlengine API 2.0, but this rlengine provides API " + API_VERSION),
    (NewerMinorPlugin(), "needs rlengine API 1.99, but this rlengine provides API " + API_VERSION),
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
