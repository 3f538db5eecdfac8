"""Building the plugin manager: entry points, failures, disabling and tracing."""

from __future__ import annotations

import importlib.metadata as md
import itertools
import sys
import textwrap

import attrs
import pluggy
import pytest

import rlengine
from rlengine import hookimpl
from rlengine.config import RunConfig
from rlengine.errors import PluginError
from rlengine.plugin.loading import ENTRY_POINT_GROUP, PluginFailure, PluginInfo
from rlengine.plugin.manager import DISABLE_ENV, TRACE_ENV, Plugins, build_plugins, find_info
from rlengine.testing import HookRecorder, ToyAlgorithm, testing_plugin
from tests import first_party

_module_numbers = itertools.count()

GOOD_PLUGIN = """
    from rlengine import hookimpl
    from rlengine.testing import ToyAlgorithm


    class FakeAlgorithm(ToyAlgorithm):
        pass


    @hookimpl
    def rlengine_register_algorithms(register):
        register("{algorithm}", FakeAlgorithm)
"""

BROKEN_PLUGIN = """
    raise RuntimeError("boom while importing\\nsecond line of the message")
"""


@pytest.fixture(autouse=True)
def _clean_plugin_env(monkeypatch):
    monkeypatch.delenv(DISABLE_ENV, raising=False)
    monkeypatch.delenv(TRACE_ENV, raising=False)


@pytest.fixture
def fake_dist(tmp_path, monkeypatch):
    """``fake_dist(name, version, {entry_point: module_source})`` installs a fake distribution.

    Each distribution gets its own directory at the front of ``sys.path`` with
    a ``<name>-<version>.dist-info`` (METADATA and entry_points.txt) and one
    uniquely named module per entry point. Returns entry point -> module name.
    """
    modules: list[str] = []

    def make(name: str, version: str, entry_points: dict[str, str]) -> dict[str, str]:
        site = tmp_path / f"site{next(_module_numbers)}"
        site.mkdir()
        dist_info = site / f"{name.replace('-', '_')}-{version}.dist-info"
        dist_info.mkdir()
        (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        lines, out = [f"[{ENTRY_POINT_GROUP}]"], {}
        for ep_name, source in entry_points.items():
            module = f"rlengine_fake_plugin_{next(_module_numbers)}"
            (site / f"{module}.py").write_text(textwrap.dedent(source))
            lines.append(f"{ep_name} = {module}")
            modules.append(module)
            out[ep_name] = module
        (dist_info / "entry_points.txt").write_text("\n".join(lines) + "\n")
        monkeypatch.syspath_prepend(str(site))
        return out

    yield make
    for module in modules:
        sys.modules.pop(module, None)


def _one_line(text: str) -> bool:
    return "\n" not in text and "\r" not in text


# -- entry points ------------------------------------------------------------
def test_entry_point_of_a_fake_distribution_is_loaded_with_its_origin(fake_dist):
    modules = fake_dist("rlengine-fake", "1.2.3", {"fake-good": GOOD_PLUGIN.format(algorithm="fake_algo")})

    plugins = build_plugins()

    assert isinstance(plugins, Plugins)
    assert plugins.failures == []
    info = find_info(plugins, "fake-good")
    assert info == PluginInfo("fake-good", "rlengine-fake", "1.2.3", modules["fake-good"])
    assert plugins.registered_by("fake-good")["algorithms"] == ["fake_algo"]
    entry = plugins.registries.algorithms.get("fake_algo")
    assert entry.plugin == "fake-good"
    assert issubclass(entry.obj, ToyAlgorithm)
    assert plugins.manager.get_plugin("fake-good") is sys.modules[modules["fake-good"]]


@pytest.mark.first_party
def test_first_party_plugins_load_through_their_distributions():
    plugins = build_plugins()

    assert plugins.failures == []
    installed = first_party.installed()
    assert installed
    for package in installed:
        (dist,) = {ep.dist for ep in md.entry_points(group=ENTRY_POINT_GROUP, name=package.entry_point)}
        assert find_info(plugins, package.entry_point).distribution == dist.metadata["Name"]
        assert any(plugins.registered_by(package.entry_point).values()), f"{package.entry_point} registered nothing"


def test_entry_points_load_before_in_process_plugins(fake_dist):
    fake_dist("rlengine-fake", "1.0", {"fake-good": GOOD_PLUGIN.format(algorithm="fake_algo")})

    plugins = build_plugins(extra_plugins=[("testing", testing_plugin())])

    names = [i.name for i in plugins.infos]
    assert names.index("fake-good") < names.index("testing")
    assert find_info(plugins, "testing") == PluginInfo("testing", "in-process", "", "rlengine.testing.kit")


def test_without_entry_points_only_in_process_plugins_load():
    plugins = build_plugins(load_entry_points=False, extra_plugins=[("testing", testing_plugin())])

    assert _third_party(plugins) == ["testing"]
    assert plugins.registries.algorithms.names() == ["toy", "toy-q"]
    assert plugins.registries.environments.names() == ["counting", "faulty", "masked", "pixels", "pixels-dict"]
    assert plugins.registries.writers.names() == ["memory"]


@pytest.mark.first_party
def test_plugin_whose_import_raises_is_a_one_line_failure_and_others_load(fake_dist):
    fake_dist("rlengine-broken", "0.4.2", {"fake-broken": BROKEN_PLUGIN})
    fake_dist("rlengine-fake", "1.0", {"fake-good": GOOD_PLUGIN.format(algorithm="fake_algo")})

    plugins = build_plugins(extra_plugins=[("testing", testing_plugin())])

    assert len(plugins.failures) == 1
    failure = plugins.failures[0]
    assert isinstance(failure, PluginFailure)
    assert (failure.name, failure.distribution, failure.version) == ("fake-broken", "rlengine-broken", "0.4.2")
    assert _one_line(failure.message)
    assert "'fake-broken'" in failure.message
    assert "rlengine-broken 0.4.2" in failure.message
    assert "RuntimeError: boom while importing" in failure.message
    assert "second line" not in failure.message
    assert "Traceback" in failure.traceback and "second line" in failure.traceback
    # The failed one is left out; every other plugin still loads.
    assert find_info(plugins, "fake-broken") is None
    assert plugins.manager.get_plugin("fake-broken") is None
    assert find_info(plugins, "fake-good") is not None
    assert find_info(plugins, "gym") is not None
    assert find_info(plugins, "testing") is not None
    assert "fake_algo" in plugins.registries.algorithms


def test_raise_failures_names_the_plugin_and_how_to_disable_it(fake_dist):
    fake_dist("rlengine-broken", "0.4.2", {"fake-broken": BROKEN_PLUGIN})
    plugins = build_plugins()

    with pytest.raises(PluginError) as info:
        plugins.raise_failures()

    message = str(info.value)
    assert _one_line(message)
    assert message.startswith(plugins.failures[0].message)
    assert "--disable-plugin fake-broken" in message
    assert f"{DISABLE_ENV}=fake-broken" in message


def test_raise_failures_is_silent_without_failures():
    plugins = build_plugins(load_entry_points=False, extra_plugins=[("testing", testing_plugin())])
    plugins.raise_failures()


def test_failure_error_is_a_plugin_error_with_the_message(fake_dist):
    fake_dist("rlengine-broken", "0.4.2", {"fake-broken": BROKEN_PLUGIN})
    failure = build_plugins().failures[0]

    error = failure.error()

    assert isinstance(error, PluginError)
    assert str(error) == failure.message


def test_disabling_a_broken_entry_point_avoids_its_failure(fake_dist):
    fake_dist("rlengine-broken", "0.4.2", {"fake-broken": BROKEN_PLUGIN})

    plugins = build_plugins(disabled=["fake-broken"])

    assert plugins.failures == []
    plugins.raise_failures()


# -- hook validation -----------------------------------------------------------
class BogusHookPlugin:
    @hookimpl
    def rlengine_bogus(self, config):
        return None


class BadSignaturePlugin:
    @hookimpl
    def rlengine_register_algorithms(self, register, extra_argument):
        register("never", ToyAlgorithm)


class FewerArgumentsPlugin:
    """A hookimpl may take fewer arguments than its spec."""

    def __init__(self):
        self.calls = 0

    @hookimpl
    def rlengine_train_end(self, run):
        self.calls += 1


def test_plugin_implementing_an_unknown_hook_fails_and_is_left_out():
    plugins = build_plugins(
        load_entry_points=False,
        extra_plugins=[("bogus", BogusHookPlugin()), ("testing", testing_plugin())],
    )

    assert [f.name for f in plugins.failures] == ["bogus"]
    failure = plugins.failures[0]
    assert _one_line(failure.message)
    assert "'bogus'" in failure.message
    assert "unknown hook" in failure.message
    assert "rlengine_bogus" in failure.message
    assert find_info(plugins, "bogus") is None
    assert plugins.manager.get_plugin("bogus") is None
    assert _third_party(plugins) == ["testing"]
    assert "toy" in plugins.registries.algorithms


def test_every_plugin_with_an_unknown_hook_is_reported():
    plugins = build_plugins(
        load_entry_points=False,
        extra_plugins=[("bogus1", BogusHookPlugin()), ("testing", testing_plugin()), ("bogus2", BogusHookPlugin())],
    )

    assert sorted(f.name for f in plugins.failures) == ["bogus1", "bogus2"]
    assert _third_party(plugins) == ["testing"]


@pytest.mark.first_party
def test_unknown_hook_in_an_entry_point_names_its_distribution(fake_dist):
    source = """
        from rlengine import hookimpl

        @hookimpl
        def rlengine_bogus():
            pass
    """
    fake_dist("rlengine-bogus", "3.1", {"fake-bogus": source})

    plugins = build_plugins()

    assert [f.name for f in plugins.failures] == ["fake-bogus"]
    assert "rlengine-bogus 3.1" in plugins.failures[0].message
    assert find_info(plugins, "gym") is not None


def test_hookimpl_with_an_argument_the_spec_lacks_fails_validation():
    plugins = build_plugins(
        load_entry_points=False,
        extra_plugins=[("badsig", BadSignaturePlugin()), ("testing", testing_plugin())],
    )

    assert [f.name for f in plugins.failures] == ["badsig"]
    failure = plugins.failures[0]
    assert _one_line(failure.message)
    assert "'badsig'" in failure.message
    assert "PluginValidationError" in failure.message
    assert "extra_argument" in failure.traceback
    assert "never" not in plugins.registries.algorithms
    assert plugins.manager.get_plugin("badsig") is None
    assert find_info(plugins, "testing") is not None


def test_hookimpl_with_fewer_arguments_than_the_spec_is_fine():
    plugin = FewerArgumentsPlugin()
    plugins = build_plugins(load_entry_points=False, extra_plugins=[("fewer", plugin)])

    assert plugins.failures == []
    plugins.hook.rlengine_train_end(run=None, error=None)
    assert plugin.calls == 1


class HalfRegisteringPlugin:
    """Registers an algorithm, then fails while registering environments."""

    configured = 0

    @hookimpl
    def rlengine_register_algorithms(self, register):
        register("half_algo", ToyAlgorithm)

    @hookimpl
    def rlengine_register_environments(self, register):
        raise ValueError("cannot list environments")

    @hookimpl
    def rlengine_configure(self, config):
        HalfRegisteringPlugin.configured += 1


def test_plugin_whose_register_hook_raises_fails_and_leaves_no_names():
    plugins = build_plugins(
        load_entry_points=False,
        extra_plugins=[("half", HalfRegisteringPlugin()), ("testing", testing_plugin())],
    )

    assert [f.name for f in plugins.failures] == ["half"]
    failure = plugins.failures[0]
    assert _one_line(failure.message)
    assert "'half'" in failure.message
    assert "failed to register" in failure.message
    assert "ValueError: cannot list environments" in failure.message
    assert "half_algo" not in plugins.registries.algorithms
    assert all(not names for names in plugins.registered_by("half").values())
    assert find_info(plugins, "half") is None
    assert plugins.manager.get_plugin("half") is None
    # Its other hooks are gone with it.
    HalfRegisteringPlugin.configured = 0
    plugins.hook.rlengine_configure(config=RunConfig())
    assert HalfRegisteringPlugin.configured == 0
    # The others are complete.
    assert "toy" in plugins.registries.algorithms
    assert "counting" in plugins.registries.environments


@pytest.mark.first_party
def test_extra_plugin_reusing_an_entry_point_name_fails_without_replacing_it():
    plugins = build_plugins(extra_plugins=[("gym", testing_plugin())])

    assert [f.name for f in plugins.failures] == ["gym"]
    assert find_info(plugins, "gym").distribution == "rlengine-gym"
    assert "toy" not in plugins.registries.algorithms


def test_same_entry_point_name_in_two_distributions_is_reported(fake_dist):
    fake_dist("rlengine-first", "1.0", {"fake-dupe": GOOD_PLUGIN.format(algorithm="first_algo")})
    fake_dist("rlengine-second", "1.0", {"fake-dupe": GOOD_PLUGIN.format(algorithm="second_algo")})

    plugins = build_plugins()

    # Neither is preferred silently: both are refused, in one failure naming both.
    assert not [i for i in plugins.infos if i.name == "fake-dupe"]
    (failure,) = [f for f in plugins.failures if f.name == "fake-dupe"]
    assert "rlengine-first 1.0" in failure.message and "rlengine-second 1.0" in failure.message
    assert "\n" not in failure.message


# -- disabling -----------------------------------------------------------------
@pytest.mark.first_party
def test_disabled_argument_skips_entry_points_and_extra_plugins():
    plugins = build_plugins(disabled=["gym", "testing"], extra_plugins=[("testing", testing_plugin())])

    names = {i.name for i in plugins.infos}
    assert "gym" not in names and "testing" not in names
    assert "gym" not in plugins.registries.environments
    assert "toy" not in plugins.registries.algorithms
    assert {"algorithms", "builtin-distributions"} <= names
    assert plugins.failures == []


@pytest.mark.first_party
def test_disable_environment_variable_skips_plugins(monkeypatch):
    monkeypatch.setenv(DISABLE_ENV, " gym , writers,,")

    plugins = build_plugins()

    names = {i.name for i in plugins.infos}
    assert "gym" not in names and "writers" not in names
    assert "algorithms" in names
    assert plugins.registries.writers.names() == []


@pytest.mark.first_party
def test_disable_environment_variable_adds_to_the_argument(monkeypatch):
    monkeypatch.setenv(DISABLE_ENV, "gym")

    plugins = build_plugins(disabled=["algorithms"])

    names = {i.name for i in plugins.infos}
    assert "gym" not in names and "algorithms" not in names
    assert "writers" in names


@pytest.mark.first_party
def test_disabling_an_unknown_name_is_harmless():
    plugins = build_plugins(disabled=["no-such-plugin"])

    assert plugins.failures == []
    assert find_info(plugins, "gym") is not None


# -- tracing -------------------------------------------------------------------
def test_trace_environment_variable_prints_hook_calls_to_stderr(monkeypatch, capsys):
    monkeypatch.setenv(TRACE_ENV, "1")

    plugins = build_plugins(load_entry_points=False, extra_plugins=[("testing", testing_plugin())])
    plugins.hook.rlengine_configure(config=RunConfig())

    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert captured.out == ""
    assert any(line.startswith("[rlengine trace] rlengine_register_algorithms(register=") and
               line.endswith("-> [testing]") for line in lines)
    assert any(line.startswith("[rlengine trace] rlengine_register_environments(") for line in lines)
    assert any(line.startswith("[rlengine trace] rlengine_configure(config=RunConfig(") for line in lines)
    assert all(len(line) < 300 for line in lines)  # long arguments are shortened


def test_trace_reports_a_hook_that_raises(monkeypatch, capsys):
    monkeypatch.setenv(TRACE_ENV, "1")

    build_plugins(load_entry_points=False, extra_plugins=[("half", HalfRegisteringPlugin())])

    err = capsys.readouterr().err
    assert "[rlengine trace] rlengine_register_environments raised ValueError('cannot list environments')" in err


def test_no_trace_without_the_environment_variable(capsys):
    plugins = build_plugins(load_entry_points=False, extra_plugins=[("testing", testing_plugin())])
    plugins.hook.rlengine_configure(config=RunConfig())

    assert "[rlengine trace]" not in capsys.readouterr().err


def test_trace_works_for_fd_level_capture(monkeypatch, capfd):
    monkeypatch.setenv(TRACE_ENV, "1")

    build_plugins(load_entry_points=False, extra_plugins=[("recorder", HookRecorder())])

    err = capfd.readouterr().err
    assert "[rlengine trace] rlengine_register_writers(" in err


# -- the core's own built-ins ----------------------------------------------------
def _third_party(plugins) -> list:
    """Names of the loaded plugins other than the core's built-ins, in load order."""
    return [i.name for i in plugins.infos if i.distribution != "rlengine"]


@pytest.mark.parametrize("load_entry_points", [True, False])
def test_builtins_register_through_the_hooks_before_any_entry_point(load_entry_points):
    plugins = build_plugins(load_entry_points=load_entry_points)

    assert [i.name for i in plugins.infos][:3] == ["builtin-pipelines", "builtin-commands", "builtin-distributions"]
    info = find_info(plugins, "builtin-distributions")
    assert info == PluginInfo("builtin-distributions", "rlengine", rlengine.__version__,
                              "rlengine.builtin.distributions")
    assert {"categorical", "normal", "squashed_normal"} <= set(plugins.registered_by(info.name)["distributions"])
    assert plugins.registered_by("builtin-pipelines")["pipelines"] == ["async", "sync"]
    assert plugins.registered_by("builtin-commands")["commands"] == ["plugins", "train"]


def test_rlengine_distribution_declares_no_entry_point_of_its_own():
    eps = [ep for ep in md.distribution("rlengine").entry_points if ep.group == ENTRY_POINT_GROUP]

    assert eps == []
    assert md.version("rlengine") == rlengine.__version__


def test_builtins_can_be_disabled_by_name_like_any_plugin():
    plugins = build_plugins(disabled=["builtin-distributions", "builtin-pipelines"])

    # (installed plugin packages may still register pipelines of their own: rlengine-ray's "ray")
    assert plugins.registries.distributions.names() == []
    assert not {"sync", "async"} & set(plugins.registries.pipelines.names())
    assert {"plugins", "train"} <= set(plugins.registries.commands.names())


# -- no manager at import time -----------------------------------------------------
def test_importing_rlengine_builds_no_plugin_manager():
    import rlengine.cli  # noqa: F401
    import rlengine.plugin.manager  # noqa: F401
    import rlengine.run.engine  # noqa: F401

    for name, module in list(sys.modules.items()):
        if name == "rlengine" or name.startswith("rlengine."):
            managers = [k for k, v in vars(module).items() if isinstance(v, (pluggy.PluginManager, Plugins))]
            assert managers == [], f"{name} holds a plugin manager at module level: {managers}"


def test_every_build_makes_a_fresh_manager_and_registries():
    first = build_plugins(load_entry_points=False, extra_plugins=[("testing", testing_plugin())])
    second = build_plugins(load_entry_points=False)

    assert first.manager is not second.manager
    assert first.registries is not second.registries
    assert "toy" in first.registries.algorithms
    assert "toy" not in second.registries.algorithms


# -- chained hooks ---------------------------------------------------------------
class SeedPlugin:
    def __init__(self, transform):
        self.transform = transform

    @hookimpl
    def rlengine_configure(self, config):
        return attrs.evolve(config, train=attrs.evolve(config.train, seed=self.transform(config.train.seed)))


def test_call_chained_runs_newest_first_and_feeds_each_result_on():
    plugins = build_plugins(load_entry_points=False, extra_plugins=[
        ("add_one", SeedPlugin(lambda s: s + 1)),
        ("keep", HookRecorder()),
        ("times_ten", SeedPlugin(lambda s: s * 10)),
    ])
    config = RunConfig()
    config.train.seed = 1

    result = plugins.call_chained("rlengine_configure", "config", config)

    assert result.train.seed == 11  # times_ten (newest) first, then add_one
    assert config.train.seed == 1


def test_an_entry_point_without_an_api_version_is_a_notice_naming_it(fake_dist):
    fake_dist("rlengine-fake", "1.2.3", {"no-version": GOOD_PLUGIN.format(algorithm="unversioned_algo")})
    declared = GOOD_PLUGIN.format(algorithm="versioned_algo") + '\nRLENGINE_API_VERSION = "1.0"\n'
    fake_dist("rlengine-fake-2", "1.0", {"with-version": declared})

    plugins = build_plugins()

    (notice,) = plugins.notices
    assert _one_line(notice)
    assert "plugin 'no-version' (rlengine-fake 1.2.3) declares no RLENGINE_API_VERSION" in notice
    assert f'RLENGINE_API_VERSION = "{rlengine.API_VERSION}"' in notice
    assert plugins.registries.algorithms.get("unversioned_algo").plugin == "no-version"  # it still loads


def test_a_disabled_name_that_no_plugin_has_is_a_notice_with_a_close_match(monkeypatch):
    monkeypatch.setenv(DISABLE_ENV, "testingg")

    plugins = build_plugins(load_entry_points=False, extra_plugins=[("testing", testing_plugin())])

    (notice,) = [n for n in plugins.notices if "testingg" in n]
    assert _one_line(notice)
    assert "'testingg' names no plugin" in notice and "Did you mean 'testing'" in notice  # first: the closest of the installed names
    assert plugins.registries.algorithms.get("toy").plugin == "testing"  # the typo disabled nothing
