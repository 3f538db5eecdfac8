"""One broken plugin never stops a run that does not use it; a run that does use it is one line naming it."""

from __future__ import annotations

import pytest

from rlengine import hookimpl
from rlengine.errors import RegistryError
from rlengine.plugin.manager import DISABLE_ENV, build_plugins
from rlengine.run.engine import Engine
from rlengine.testing import testing_plugin, tiny_config


@pytest.fixture(autouse=True)
def _clean_plugin_env(monkeypatch):
    monkeypatch.delenv(DISABLE_ENV, raising=False)


class RegistersUnimportable:
    """Registers an algorithm (with a config section) as a reference that cannot be imported."""

    @hookimpl
    def rlengine_register_algorithms(self, register):
        register("ghost", "no_such_module_of_rlengine_tests:Ghost")


class FailsToRegister:
    """Raises in its registration hook: it is left out whole."""

    @hookimpl
    def rlengine_register_algorithms(self, register):
        raise RuntimeError("the plugin's own bug")


def test_an_unimportable_registration_does_not_stop_a_run_that_uses_another(tmp_path):
    engine = Engine(tiny_config(str(tmp_path)), extra_plugins=[("testing", testing_plugin()),
                                                               ("ghostly", RegistersUnimportable())])

    assert engine.train().env_steps == 32


def test_a_run_that_names_the_unimportable_class_is_one_line_naming_the_plugin(tmp_path):
    with pytest.raises(RegistryError) as info:
        Engine(tiny_config(str(tmp_path), algorithm="ghost"),
               extra_plugins=[("testing", testing_plugin()), ("ghostly", RegistersUnimportable())])

    message = str(info.value)
    assert "\n" not in message
    assert "plugin 'ghostly'" in message and "'ghost'" in message
    assert "no_such_module_of_rlengine_tests" in message


def test_a_section_of_the_unimportable_class_in_the_config_is_refused_naming_the_plugin(tmp_path):
    raw = {**tiny_config(str(tmp_path)), "ghost": {"x": 1}}

    with pytest.raises(RegistryError, match="plugin 'ghostly'"):
        Engine(raw, extra_plugins=[("testing", testing_plugin()), ("ghostly", RegistersUnimportable())])


def test_a_plugin_that_fails_to_register_is_a_warning_and_the_run_goes_on(tmp_path, capfd):
    engine = Engine(tiny_config(str(tmp_path)), extra_plugins=[("testing", testing_plugin()),
                                                               ("buggy", FailsToRegister())])
    Engine(tiny_config(str(tmp_path / "again")), extra_plugins=[("testing", testing_plugin()),
                                                                ("buggy", FailsToRegister())])

    assert engine.train().env_steps == 32
    lines = [line for line in capfd.readouterr().err.splitlines() if "plugin 'buggy'" in line]
    assert len(lines) == 1, lines  # said once per process, not once per run
    assert "the plugin's own bug" in lines[0] and "--disable-plugin buggy" in lines[0]


def test_an_unknown_name_lists_the_plugins_that_could_not_be_loaded(tmp_path):
    with pytest.raises(RegistryError) as info:
        Engine(tiny_config(str(tmp_path), algorithm="from_buggy"),
               extra_plugins=[("testing", testing_plugin()), ("buggy", FailsToRegister())])

    message = str(info.value)
    assert "unknown algorithm 'from_buggy'" in message
    assert "plugin 'buggy'" in message and "the plugin's own bug" in message


def test_a_contested_name_is_refused_only_to_the_run_that_names_it():
    class RegistersToy:
        @hookimpl
        def rlengine_register_algorithms(self, register):
            from rlengine.testing import ToyAlgorithm

            register("toy", ToyAlgorithm)

    plugins = build_plugins(load_entry_points=False,
                            extra_plugins=[("testing", testing_plugin()), ("again", RegistersToy())])

    with pytest.raises(RegistryError, match="registered by both plugin 'testing' and plugin 'again'"):
        plugins.registries.algorithms.get("toy")
    assert plugins.registries.environments.get("counting").plugin == "testing"


def test_a_class_whose_dependency_is_missing_says_what_to_install(tmp_path, monkeypatch):
    (tmp_path / "needs_a_missing_package.py").write_text(
        "import no_such_dependency_of_rlengine_tests\nclass Thing:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    class RegistersNeedy:
        @hookimpl
        def rlengine_register_algorithms(self, register):
            register("needy", "needs_a_missing_package:Thing")

    plugins = build_plugins(load_entry_points=False, extra_plugins=[("needy-plugin", RegistersNeedy())])

    with pytest.raises(RegistryError) as info:
        plugins.registries.algorithms.get("needy").obj
    message = str(info.value)
    assert "plugin 'needy-plugin'" in message
    assert "pip install no_such_dependency_of_rlengine_tests" in message


def test_a_registered_module_that_does_not_exist_is_not_an_install_hint():
    plugins = build_plugins(load_entry_points=False, extra_plugins=[("ghostly", RegistersUnimportable())])

    with pytest.raises(RegistryError) as info:
        plugins.registries.algorithms.get("ghost").obj
    assert "pip install" not in str(info.value)
