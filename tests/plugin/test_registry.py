"""Name -> class registries: unique names, base classes, helpful unknown-name errors."""

from __future__ import annotations

import pytest

from rlengine import hookimpl
from rlengine.errors import RegistryError
from rlengine.plugin.manager import DISABLE_ENV, build_plugins, find_info
from rlengine.plugin.registry import KIND_BY_NAME, KINDS, Entry, Registries, Registry
from rlengine.run.engine import Engine
from rlengine.testing import CountingEnv, MemoryWriter, ToyAlgorithm, testing_plugin, tiny_config


@pytest.fixture(autouse=True)
def _clean_plugin_env(monkeypatch):
    monkeypatch.delenv(DISABLE_ENV, raising=False)


class AnotherToy(ToyAlgorithm):
    pass


class RegistersAlgorithm:
    def __init__(self, name, obj):
        self.name, self.obj = name, obj

    @hookimpl
    def rlengine_register_algorithms(self, register):
        register(self.name, self.obj)


def _in_process(*plugins):
    return build_plugins(load_entry_points=False, extra_plugins=list(plugins))


# -- duplicates ------------------------------------------------------------------
def test_duplicate_name_across_two_plugins_names_both():
    registry = Registry(KIND_BY_NAME["algorithm"])
    registry.register_for("first")("dup", ToyAlgorithm)
    registry.register_for("second")("dup", AnotherToy)

    with pytest.raises(RegistryError) as info:  # a run naming it is refused: it could mean either
        registry.get("dup")

    message = str(info.value)
    assert [clash for _, clash in registry.clashes] == [message]
    assert "\n" not in message
    assert "algorithm 'dup'" in message
    assert "plugin 'first'" in message and "plugin 'second'" in message
    assert "--disable-plugin first or --disable-plugin second" in message
    assert registry.names() == ["dup"] and next(iter(registry)).obj is ToyAlgorithm  # the first one's entry


class RegistersTwo(RegistersAlgorithm):
    """Registers an algorithm and an environment: a clash on one leaves the other registered."""

    @hookimpl
    def rlengine_register_environments(self, register):
        register(f"{self.name}_env", CountingEnv)


def test_duplicate_name_while_building_plugins_is_a_failure_of_that_name_only():
    plugins = _in_process(("first", RegistersAlgorithm("dup", ToyAlgorithm)),
                          ("second", RegistersTwo("dup", AnotherToy)))

    assert [f.name for f in plugins.failures] == ["second"]
    message = plugins.failures[0].message
    assert "plugin 'first'" in message and "plugin 'second'" in message
    assert [e.plugin for e in plugins.registries.algorithms if e.name == "dup"] == ["first"]
    assert [i.name for i in plugins.infos if i.distribution != "rlengine"] == ["first", "second"]
    assert plugins.registries.environments.get("dup_env").plugin == "second"  # its other names stay


@pytest.mark.first_party
def test_duplicate_name_with_an_entry_point_plugin_is_refused_by_the_engine(tmp_path):
    """The run names the contested algorithm: it could have meant either plugin's, so it is refused."""
    with pytest.raises(RegistryError) as info:
        Engine(tiny_config(str(tmp_path), algorithm="ppo"), extra_plugins=[("testing", testing_plugin()),
                                                          ("mine", RegistersAlgorithm("ppo", AnotherToy))])

    message = str(info.value)
    assert "algorithm 'ppo'" in message
    assert "plugin 'algorithms'" in message and "plugin 'mine'" in message
    assert "--disable-plugin mine" in message


def test_same_name_in_different_kinds_is_allowed():
    registries = Registries()
    registries.algorithms.register_for("p")("same", ToyAlgorithm)
    registries.environments.register_for("p")("same", CountingEnv)

    assert registries.algorithms.get("same").obj is ToyAlgorithm
    assert registries.environments.get("same").obj is CountingEnv


# -- unknown names ---------------------------------------------------------------
def test_unknown_name_lists_available_names_and_suggests_a_close_match():
    plugins = _in_process(("testing", testing_plugin()), ("other", RegistersAlgorithm("topo", AnotherToy)))

    with pytest.raises(RegistryError) as info:
        plugins.registries.algorithms.get("tyo")

    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("unknown algorithm 'tyo'; available: topo, toy, toy-q.")
    assert "Did you mean 'toy'" in message


def test_unknown_name_far_from_everything_suggests_nothing():
    plugins = _in_process(("testing", testing_plugin()))

    with pytest.raises(RegistryError) as info:
        plugins.registries.environments.get("zzzzzzzz")

    assert "available: counting" in str(info.value)
    assert "Did you mean" not in str(info.value)


def test_unknown_name_in_an_empty_registry_says_none():
    with pytest.raises(RegistryError, match=r"unknown writer 'memory'; available: none\."):
        Registries().writers.get("memory")


@pytest.mark.first_party
def test_engine_reports_an_unknown_algorithm_with_a_suggestion(tmp_path):
    root = tmp_path / "run"
    with pytest.raises(RegistryError) as info:  # refused before anything is built or written
        Engine(tiny_config(str(root), algorithm="tyo"), extra_plugins=[("testing", testing_plugin())])
    assert not root.exists()

    assert "unknown algorithm 'tyo'" in str(info.value)
    assert "Did you mean 'toy'" in str(info.value)
    assert "ppo" in str(info.value)  # entry-point algorithms are listed too


# -- wrong types -------------------------------------------------------------------
class NotAnything:
    pass


@pytest.mark.parametrize("kind, base", [
    ("algorithm", "Algorithm"),
    ("environment", "Environment"),
    ("transformer", "ObservationTransformer"),
    ("writer", "SummaryWriter"),
])
def test_registering_a_class_of_the_wrong_type_names_the_plugin(kind, base):
    registry = Registries()[kind]

    with pytest.raises(RegistryError) as info:
        registry.register_for("sloppy")("thing", NotAnything)

    message = str(info.value)
    assert "\n" not in message
    assert "plugin 'sloppy'" in message
    assert f"{kind} 'thing'" in message
    assert f"not a subclass of rlengine.{base}" in message
    assert "thing" not in registry


@pytest.mark.parametrize("obj", [ToyAlgorithm.__init__, "ToyAlgorithm", None, CountingEnv])
def test_algorithm_registry_refuses_non_algorithm_classes_and_instances(obj):
    with pytest.raises(RegistryError, match="plugin 'sloppy'.*not a subclass of rlengine.Algorithm"):
        Registries().algorithms.register_for("sloppy")("thing", obj)


def test_wrong_type_while_building_plugins_fails_that_plugin_only():
    plugins = _in_process(("sloppy", RegistersAlgorithm("thing", MemoryWriter)), ("testing", testing_plugin()))

    assert [f.name for f in plugins.failures] == ["sloppy"]
    assert "plugin 'sloppy' registered algorithm 'thing'" in plugins.failures[0].message
    assert "thing" not in plugins.registries.algorithms
    assert find_info(plugins, "testing") is not None


def test_subclasses_of_the_right_base_are_accepted():
    registries = Registries()
    registries.algorithms.register_for("p")("toy", ToyAlgorithm)
    registries.environments.register_for("p")("counting", CountingEnv)
    registries.writers.register_for("p")("memory", MemoryWriter)

    assert registries.algorithms.get("toy") == Entry("toy", ToyAlgorithm, "p")


# -- names -------------------------------------------------------------------------
@pytest.mark.parametrize("name", [3, None, b"toy", "", ("toy",)])
def test_name_must_be_a_non_empty_string(name):
    registry = Registries().algorithms

    with pytest.raises(RegistryError) as info:
        registry.register_for("odd")(name, ToyAlgorithm)

    assert "plugin 'odd'" in str(info.value)
    assert "not a non-empty string" in str(info.value)
    assert registry.names() == []


def test_non_string_name_while_building_plugins_is_a_failure():
    plugins = _in_process(("odd", RegistersAlgorithm(42, ToyAlgorithm)))

    assert [f.name for f in plugins.failures] == ["odd"]
    assert "42" in plugins.failures[0].message


# -- the registry itself -------------------------------------------------------------
def test_distribution_registry_keeps_extra_arguments_and_checks_no_base():
    registry = Registries().distributions
    to_params, from_params = (lambda d: {}), (lambda p: None)

    registry.register_for("p")("thing", NotAnything, to_params, from_params)

    assert registry.get("thing") == Entry("thing", NotAnything, "p", (to_params, from_params))


def test_registries_have_one_registry_per_kind():
    registries = Registries()

    assert [k.name for k in KINDS] == ["algorithm", "environment", "graph_environment", "transformer", "writer",
                                       "pipeline",
                                       "distribution", "command", "callback", "network",
                                       "preset"]
    assert [registries[k.name].kind for k in KINDS] == list(KINDS)
    assert registries.pipelines is registries["pipeline"] and registries.commands is registries["command"]
    assert registries.algorithms is registries["algorithm"]
    assert registries.environments is registries["environment"]
    assert registries.graph_environments is registries["graph_environment"]
    assert registries.transformers is registries["transformer"]
    assert registries.writers is registries["writer"]
    assert registries.distributions is registries["distribution"]


def test_names_iteration_membership_and_remove_plugin():
    registry = Registry(KIND_BY_NAME["algorithm"])
    registry.register_for("a")("zeta", ToyAlgorithm)
    registry.register_for("b")("alpha", AnotherToy)
    registry.register_for("a")("mid", AnotherToy)

    assert registry.names() == ["alpha", "mid", "zeta"]
    assert "alpha" in registry and "beta" not in registry
    assert {e.name for e in registry} == {"alpha", "mid", "zeta"}

    registry.remove_plugin("a")

    assert registry.names() == ["alpha"]
    registry.register_for("c")("zeta", ToyAlgorithm)  # the name is free again
    assert registry.get("zeta").plugin == "c"


def test_registered_by_reports_each_kind():
    plugins = _in_process(("testing", testing_plugin()))

    assert plugins.registered_by("testing") == {
        "algorithms": ["toy", "toy-q"], "environments": ["counting", "faulty", "masked", "pixels", "pixels-dict"],
        "graph_environments": ["graph-counting"], "transformers": [], "writers": ["memory"], "distributions": [], "pipelines": [], "commands": [], "callbacks": [],
        "networks": [], "presets": [],
    }
    assert plugins.registered_by("nobody") == {k.plural: [] for k in KINDS}
