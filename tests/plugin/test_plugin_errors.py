"""A plugin's error reaches the user as one line that names the plugin and keeps the cause.

pluggy's own messages span lines (its validation error ends with the line
that names the argument), and ``pm.register`` fails with a bare
``TypeError`` on an object it cannot hash; rlengine turns each into one
line naming the plugin, and keeps the cause in it.
"""

from __future__ import annotations

import attrs
import pytest

from rlengine import ConfigError, PluginError, hookimpl
from rlengine.plugin.manager import build_plugins, find_info


def _one_line(text: str) -> bool:
    return "\n" not in text and text == text.strip() and text != ""


def _failure_of(plugins, name: str):
    failures = [f for f in plugins.failures if f.name == name]
    assert len(failures) == 1, plugins.failures
    return failures[0]


def _raised_by_raise_failures(plugins) -> str:
    with pytest.raises(PluginError) as info:
        plugins.raise_failures()
    return str(info.value)


class Fine:
    """A plugin that loads: its neighbours' failures must not keep it out."""

    @hookimpl
    def rlengine_register_algorithms(self, register):
        register("fine", "fine_plugin_module:FineAlgorithm")  # lazy: never imported here


# -- a hookimpl with an argument its hookspec lacks ----------------------------------------
class ExtraArgument:
    @hookimpl
    def rlengine_register_algorithms(self, register, extra_argument):
        register("never", "nowhere:Never")


class ExtraLifecycleArgument:
    @hookimpl
    def rlengine_train_end(self, run, error, verbosity):
        pass


@pytest.mark.parametrize("plugin,hook,argument", [
    (ExtraArgument(), "rlengine_register_algorithms", "extra_argument"),
    (ExtraLifecycleArgument(), "rlengine_train_end", "verbosity"),
], ids=["registration-hook", "lifecycle-hook"])
def test_an_argument_the_hookspec_lacks_is_one_line_naming_the_plugin_and_the_argument(plugin, hook, argument):
    plugins = build_plugins(load_entry_points=False, extra_plugins=[("extra-arg", plugin), ("fine", Fine())])

    failure = _failure_of(plugins, "extra-arg")
    assert _one_line(failure.message)
    assert failure.message.startswith("plugin 'extra-arg' (in-process) ")
    # pluggy's reason, kept: the hook, the argument, and that the spec lacks it.
    assert hook in failure.message and repr({argument}) in failure.message and "hookspec" in failure.message
    assert "PluginValidationError" in failure.message
    assert "Traceback" in failure.traceback  # --debug shows it
    # Left out; the others still load.
    assert find_info(plugins, "extra-arg") is None and find_info(plugins, "fine") is not None
    assert "fine" in plugins.registries.algorithms and "never" not in plugins.registries.algorithms

    message = _raised_by_raise_failures(plugins)
    assert _one_line(message)
    assert "'extra-arg'" in message and argument in message and "--disable-plugin extra-arg" in message


# -- a hook that raises ---------------------------------------------------------------------
class RaisesInConfigure:
    @hookimpl
    def rlengine_configure(self, config):
        raise ValueError("the answer must be 42\nsecond line of detail")


class RaisesAUserError:
    @hookimpl
    def rlengine_configure(self, config):
        raise ConfigError("[mine] answer must be 42, got 41")


class RaisesInRegistration:
    @hookimpl
    def rlengine_register_writers(self, register):
        register("half", "half_module:HalfWriter")
        raise RuntimeError("no writers today")


def test_a_hook_that_raises_names_the_plugin_the_hook_and_the_exception():
    plugins = build_plugins(load_entry_points=False, extra_plugins=[("raiser", RaisesInConfigure()),
                                                                    ("fine", Fine())])

    with pytest.raises(PluginError) as info:
        plugins.hook.rlengine_configure(config=None)

    message = str(info.value)
    assert _one_line(message)
    assert message.startswith("plugin 'raiser' (in-process) raised in hook rlengine_configure: "
                              "ValueError: the answer must be 42 ")
    assert "second line" not in message
    assert "--disable-plugin raiser" in message
    assert isinstance(info.value.__cause__, ValueError)  # the traceback --debug prints


def test_an_rlengine_error_raised_by_a_hook_reaches_the_user_unchanged():
    plugins = build_plugins(load_entry_points=False, extra_plugins=[("strict", RaisesAUserError())])

    with pytest.raises(ConfigError, match=r"^\[mine\] answer must be 42, got 41$"):
        plugins.hook.rlengine_configure(config=None)


def test_a_registration_hook_that_raises_leaves_the_plugin_out_naming_it_and_the_exception():
    plugins = build_plugins(load_entry_points=False, extra_plugins=[("raiser", RaisesInRegistration()),
                                                                    ("fine", Fine())])

    failure = _failure_of(plugins, "raiser")
    assert _one_line(failure.message)
    assert failure.message.startswith("plugin 'raiser' (in-process) ")
    assert "RuntimeError: no writers today" in failure.message
    # What it registered before raising is forgotten; the others are there.
    assert "half" not in plugins.registries.writers and "fine" in plugins.registries.algorithms
    assert "RuntimeError: no writers today" in _raised_by_raise_failures(plugins)


def test_a_registration_hook_that_raises_is_named():
    plugins = build_plugins(load_entry_points=False, extra_plugins=[("raiser", RaisesInRegistration())])

    assert "rlengine_register_writers" in _failure_of(plugins, "raiser").message


# -- an in-process plugin object pluggy cannot hold ----------------------------------------------
@attrs.define  # eq=True by default, so attrs sets __hash__ = None
class AttrsPlugin:
    scale: float = 1.0

    @hookimpl
    def rlengine_register_algorithms(self, register):
        register("scaled", "scaled_module:Scaled")


@attrs.define(eq=False)  # what the message advises: keeps object.__hash__
class HashableAttrsPlugin:
    scale: float = 1.0

    @hookimpl
    def rlengine_register_algorithms(self, register):
        register("scaled", "scaled_module:Scaled")


def test_an_unhashable_plugin_object_is_one_clear_line_not_a_type_error():
    plugins = build_plugins(load_entry_points=False, extra_plugins=[("attrs-plugin", AttrsPlugin()),
                                                                    ("fine", Fine())])

    failure = _failure_of(plugins, "attrs-plugin")
    assert _one_line(failure.message)
    assert failure.message.startswith("plugin 'attrs-plugin' (in-process) is a AttrsPlugin object, which is "
                                      "not hashable")
    assert "eq=False" in failure.message  # the fix
    assert "unhashable type" not in failure.message  # not pluggy's raw TypeError
    assert find_info(plugins, "attrs-plugin") is None and "scaled" not in plugins.registries.algorithms
    assert "fine" in plugins.registries.algorithms

    message = _raised_by_raise_failures(plugins)
    assert _one_line(message) and "'attrs-plugin'" in message and "not hashable" in message


def test_the_advised_fix_for_an_unhashable_plugin_loads_it():
    plugins = build_plugins(load_entry_points=False, extra_plugins=[("attrs-plugin", HashableAttrsPlugin())])

    assert plugins.failures == []
    assert plugins.registries.algorithms.get("scaled").plugin == "attrs-plugin"
