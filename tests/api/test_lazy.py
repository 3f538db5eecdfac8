"""rlengine.lazy: facades whose names load on first use, and old module paths that still import."""

from __future__ import annotations

import importlib
import json
import sys
import types
import warnings

import pytest

import rlengine
from rlengine.lazy import MOVED_MODULES, lazy_facade
from tests.plugin_packages import run_python


def _facade(prepared: list[str]) -> types.ModuleType:
    """A module ``facade`` whose names come from json (prepared first) and os.path (not)."""
    module = types.ModuleType("facade")
    module.__getattr__, module.__dir__, module.__all__ = lazy_facade(
        vars(module), {"dumps": "json", "join": "os.path"}, modules={"paths": "os.path"}, eager=("VERSION",),
        prepare=lambda: prepared.append("prepared"), unprepared={"os.path"})
    module.VERSION = "1"
    return module


def test_a_lazy_name_loads_from_its_module_and_is_kept():
    prepared: list[str] = []
    facade = _facade(prepared)

    assert facade.__all__ == ["VERSION", "dumps", "join", "paths"]
    assert "dumps" not in vars(facade) and facade.dumps is json.dumps and vars(facade)["dumps"] is json.dumps
    assert prepared == ["prepared"]
    assert facade.join is importlib.import_module("os.path").join and facade.paths.__name__ == "posixpath"
    assert prepared == ["prepared"], "a module of the unprepared set was imported after prepare"
    assert {"VERSION", "dumps", "join", "paths"} <= set(dir(facade))


def test_an_unknown_name_raises_attribute_error_with_the_usual_message():
    with pytest.raises(AttributeError, match=r"^module 'facade' has no attribute 'nope'$"):
        _facade([]).nope
    with pytest.raises(AttributeError, match=r"^module 'rlengine' has no attribute 'nope'$"):
        rlengine.nope  # noqa: B018
    with pytest.raises(ImportError, match="cannot import name 'nope' from 'rlengine.api'"):
        from rlengine.api import nope  # noqa: F401


# Imports the TensorFlow-free names of both core facades, then reports whether TensorFlow came with them.
TF_FREE_PROBE = """
import json, sys
import rlengine, rlengine.api
light = [n for n in rlengine.__all__ if rlengine._WHERE.get(n) in rlengine._TENSORFLOW_FREE]
[getattr(rlengine, n) for n in light]
[getattr(rlengine.api, n) for n in rlengine.api.__all__ if rlengine.api.WHERE[n] in rlengine.api.TENSORFLOW_FREE]
print(json.dumps([light, "tensorflow" in sys.modules]))
"""


def test_tensorflow_free_names_of_the_facades_do_not_import_tensorflow(tmp_path):
    process = run_python("-c", TF_FREE_PROBE, pythonpath=[], cwd=tmp_path, timeout=120)
    assert process.returncode == 0, process.stderr[-3000:]
    light, imported = json.loads(process.stdout.splitlines()[-1])
    assert {"Command", "ConfigError", "RunConfig", "Pipeline"} <= set(light)
    assert imported is False


@pytest.mark.parametrize("old, new", sorted(MOVED_MODULES.items()))
def test_an_old_module_path_imports_the_new_module_with_a_deprecation_warning(old, new):
    sys.modules.pop(old, None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        __import__(old)  # the import statement's own call: the warning points at this line
    moved = sys.modules[old]

    assert moved is importlib.import_module(new)
    assert moved.__name__ == new and moved.__spec__.name == new, "the module must still name where it lives"
    (warning,) = [w for w in caught if issubclass(w.category, DeprecationWarning) and old in str(w.message)]
    assert new in str(warning.message) and warning.filename == __file__, "the warning must point at the importer"


def test_only_the_moved_paths_are_found_by_the_old_path_finder():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("rlengine.learn.replay_nothing")
    from rlengine.learn.replay import ReplayBuffer
    from rlengine.learn.replay.buffer import ReplayBuffer as defined

    assert ReplayBuffer is defined
