"""The plugin manager, built once per run (never at import time), and the :class:`Plugins` of a run.

Order: hook specs, then the core's built-in plugins (:mod:`rlengine.plugin.core_plugins`,
registered through the same hooks as any other), then every ``rlengine``
entry point (minus disabled ones), then in-process plugins passed by the
caller, then ``check_pending()``, then the registration hooks fill the
registries, one plugin at a time so each name is attributed to its plugin.
A plugin that fails at any step is recorded as a
:class:`~rlengine.plugin.loading.PluginFailure` and left out, so the others
still load and list. Each step on one plugin is in
:mod:`rlengine.plugin.loading`; this module decides which plugins, in which
order, and holds what the run then uses.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Iterable, Optional

import attrs
import pluggy

from rlengine.errors import PluginError, close_matches
from rlengine.plugin import hookspecs
from rlengine.plugin.calls import GuardedCaller, GuardedHooks, wrong_result_message
from rlengine.plugin.core_plugins import BUILTIN_DISTRIBUTION, BUILTIN_PLUGINS, load_builtin
from rlengine.plugin.loading import (
    ENTRY_POINT_GROUP,
    PluginFailure,
    PluginInfo,
    check_pending,
    entry_points,
    load_entry_point,
    module_of,
    register,
    run_registration,
)
from rlengine.plugin.markers import CORE_VERSION
from rlengine.plugin.recipe import PluginRecipe
from rlengine.plugin.registry import KINDS, Registries

DISABLE_ENV = "RLENGINE_DISABLE_PLUGINS"
_FAILURES_SAID: set = set()  # the plugin failures this process has warned of
TRACE_ENV = "RLENGINE_TRACE_PLUGINS"


@attrs.frozen
class ActiveCallback:
    """A callback instance registered with the manager for one run (see :mod:`rlengine.run.callbacks`)."""

    name: str  # the name it was registered under, also its config section
    plugin: str  # the plugin that registered its class


@attrs.define
class Plugins:
    """What one run loaded: the pluggy manager, registries, infos and failures."""

    manager: pluggy.PluginManager
    registries: Registries
    infos: list[PluginInfo]
    failures: list[PluginFailure]
    #: The manager's name of each callback instance registered for the run in progress -> what it is.
    callbacks: dict[str, ActiveCallback] = attrs.field(factory=dict)
    recipe: Optional[PluginRecipe] = None  # how another process (a remote env runner) loads the same plugins
    #: one line each about plugins that loaded but should be fixed (no RLENGINE_API_VERSION)
    notices: list[str] = attrs.field(factory=list)

    @property
    def hook(self) -> Any:
        """``manager.hook``, but an implementation that raises becomes a PluginError naming it."""
        return GuardedHooks(self)

    def report_failures(self) -> None:
        """Say once per process, one line each, which plugins could not be loaded: the run goes on without them.

        A run that asks for a name one of them would have registered stops there, and that error lists
        the plugins that could not be loaded (:meth:`Registry.get <rlengine.plugin.registry.Registry.get>`).
        """
        loaded = {info.name for info in self.infos}  # a plugin with a name clash keeps its other names
        lines = [*self.notices, *(failure.message + ("" if failure.name in loaded else (
            f"; left out of this process (--disable-plugin {failure.name} silences this; --debug shows the "
            "traceback)")) for failure in self.failures)]
        for line in lines:
            if line not in _FAILURES_SAID:
                _FAILURES_SAID.add(line)
                print(f"rlengine: warning: {line}", file=sys.stderr)

    def raise_failures(self) -> None:
        """Refuse to run with a plugin missing: raise the first failure."""
        if self.failures:
            first = self.failures[0]
            raise PluginError(
                f"{first.message} (disable it with --disable-plugin {first.name} "
                f"or {DISABLE_ENV}={first.name}; --debug shows the traceback)"
            )

    def call_chained(self, hook_name: str, argument: str, value: Any, expect: Optional[type] = None) -> Any:
        """Call ``hook_name`` plugin by plugin (newest first), each seeing the
        previous result as ``argument``; ``None`` results keep the value. A result
        that is not an ``expect`` instance is a PluginError naming the plugin."""
        caller = getattr(self.manager.hook, hook_name)
        for impl in reversed(caller.get_hookimpls()):
            others = [p for p in self.manager.get_plugins() if p is not impl.plugin]
            subset = self.manager.subset_hook_caller(hook_name, remove_plugins=others)
            results = GuardedCaller(self, subset)(**{argument: value})
            if results and results[0] is not None:
                if expect is not None and not isinstance(results[0], expect):
                    name = self.manager.get_name(impl.plugin) or "?"
                    raise PluginError(wrong_result_message(self, name, hook_name, argument, expect, results[0]))
                value = results[0]
        return value

    def culprit(self, name: str) -> tuple[str, str]:
        """``(who, how to switch it off)`` for the plugin (or callback instance) the manager calls ``name``."""
        callback = self.callbacks.get(name)
        if callback is not None:
            return self.callback_label(callback.name, callback.plugin), callback_switch_off(callback.name)
        return f"plugin {name!r}{self.origin(name)}", f"disable it with --disable-plugin {name}"

    def callback_label(self, callback: str, plugin: str) -> str:
        """``callback 'NAME' of plugin 'PLUGIN' (distribution version)``, as error messages name a callback."""
        return f"callback {callback!r} of plugin {plugin!r}{self.origin(plugin)}"

    def origin(self, plugin: str) -> str:
        """`` (distribution version)`` of a loaded plugin, or '' when unknown."""
        info = find_info(self, plugin)
        origin = f"{info.distribution} {info.version}".strip() if info else ""
        return f" ({origin})" if origin else ""

    def registered_by(self, plugin: str) -> dict[str, list[str]]:
        """Names ``plugin`` registered, keyed by the plural of each kind (``algorithms``, ...)."""
        return {kind.plural: sorted(e.name for e in self.registries[kind.name] if e.plugin == plugin)
                for kind in KINDS}


def callback_switch_off(callback: str) -> str:
    """How a user leaves one callback out of a run (the rest of its plugin stays)."""
    return f"switch it off with --set 'train.disabled_callbacks=[\"{callback}\"]'"


def disabled_from_env() -> set[str]:
    return {n.strip() for n in os.environ.get(DISABLE_ENV, "").split(",") if n.strip()}


def build_plugins(
    disabled: Iterable[str] = (),
    extra_plugins: Iterable[tuple[str, Any]] = (),
    load_entry_points: bool = True,
) -> Plugins:
    """Build a fresh plugin manager and fill the registries.

    ``disabled`` names entry points (or extra plugins) to skip, on top of the
    ``RLENGINE_DISABLE_PLUGINS`` environment variable. ``extra_plugins`` are
    ``(name, module_or_object)`` pairs registered in-process, after the
    entry points (tests and notebooks use this).
    """
    extra_plugins = list(extra_plugins)  # iterated twice: registered, then kept in the recipe
    pm = pluggy.PluginManager(ENTRY_POINT_GROUP)
    pm.add_hookspecs(hookspecs)
    if os.environ.get(TRACE_ENV):
        _enable_tracing(pm)
    skip = set(disabled) | disabled_from_env()
    infos: list[PluginInfo] = []
    failures: list[PluginFailure] = []
    notices: list[str] = []
    for name, module in BUILTIN_PLUGINS:
        if name not in skip:
            plugin = load_builtin(module)
            register(pm, name, plugin, PluginInfo(name, BUILTIN_DISTRIBUTION, CORE_VERSION, module), infos,
                     failures)
    installed = entry_points(failures if load_entry_points else [])  # read once: names to disable, plugins to load
    for ep in installed if load_entry_points else []:
        if ep.name not in skip:
            load_entry_point(pm, ep, infos, failures, notices)
    for name, plugin in extra_plugins:
        if name not in skip:
            register(pm, name, plugin, PluginInfo(name, "in-process", "", module_of(plugin)), infos, failures)
    notices += unknown_disabled(skip, [n for n, _ in BUILTIN_PLUGINS] + [ep.name for ep in installed]
                                + [n for n, _ in extra_plugins])
    check_pending(pm, infos, failures)
    registries = Registries()
    for info in list(infos):
        run_registration(pm, info, registries, infos, failures)
    failures += [clash_failure(plugin, clash, infos) for plugin, clash in registries.clashes]
    loaded = {info.name for info in infos}
    registries.failed_plugins[:] = [f.message for f in failures if f.name not in loaded]
    return Plugins(pm, registries, infos, failures, recipe=PluginRecipe.of(skip, extra_plugins, load_entry_points),
                   notices=notices)


def unknown_disabled(disabled: Iterable[str], names: list) -> list[str]:
    """One line for each name to disable that no plugin has (a typo would leave the plugin on, silently)."""
    return [f"--disable-plugin (or {DISABLE_ENV}) {name!r} names no plugin; there are: {', '.join(sorted(names))}."
            + close_matches(name, names) for name in sorted(set(disabled) - set(names))]


def clash_failure(plugin: str, clash: str, infos: list) -> PluginFailure:
    """A name ``plugin`` registered after another plugin had: its other names stay, this one is refused."""
    info = next(i for i in infos if i.name == plugin)
    origin = f"{info.distribution} {info.version}".strip()
    return PluginFailure(plugin, info.distribution, info.version, f"plugin {plugin!r} ({origin}): {clash}", "")


def rebuild_plugins(recipe: PluginRecipe) -> Plugins:
    """A fresh manager with the plugins of the run that wrote ``recipe`` (in another process)."""
    return build_plugins(recipe.disabled, recipe.extra_plugins(), recipe.load_entry_points)


def _enable_tracing(pm: pluggy.PluginManager) -> None:
    def before(hook_name, hook_impls, kwargs):
        names = ", ".join(pm.get_name(i.plugin) or "?" for i in hook_impls)
        args = ", ".join(f"{k}={_short(v)}" for k, v in kwargs.items())
        print(f"[rlengine trace] {hook_name}({args}) -> [{names}]", file=sys.stderr)

    def after(outcome, hook_name, hook_impls, kwargs):
        if outcome.exception is not None:
            print(f"[rlengine trace] {hook_name} raised {outcome.exception!r}", file=sys.stderr)

    pm.add_hookcall_monitoring(before, after)


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def find_info(plugins: Plugins, name: str) -> Optional[PluginInfo]:
    return next((i for i in plugins.infos if i.name == name), None)
