"""The plugin manager, built once per run (never at import time).

Order: hook specs, then the core's built-in plugins (:mod:`rlengine.plugin.builtin`,
registered through the same hooks as any other), then every ``rlengine``
entry point (minus disabled ones), then in-process plugins passed by the
caller, then ``check_pending()``, then the registration hooks fill the
registries, one plugin at a time so each name is attributed to its plugin. A plugin that fails at any step is recorded as a
:class:`PluginFailure` and left out, so the others still load and list.
"""

from __future__ import annotations

import importlib.metadata as md
import os
import sys
import traceback
from typing import Any, Iterable, Optional

import attrs
import pluggy

from rlengine.errors import PluginError, one_line
from rlengine.plugin import hookspecs
from rlengine.plugin.builtin import BUILTIN_DISTRIBUTION, BUILTIN_PLUGINS, load_builtin
from rlengine.plugin.calls import GuardedCaller, GuardedHooks, wrong_result_message
from rlengine.plugin.markers import API_VERSION, CORE_VERSION, PROJECT
from rlengine.plugin.recipe import PluginRecipe
from rlengine.plugin.registry import KINDS, Registries
from rlengine.quiet_tensorflow import tensorflow_start_up_dropped

ENTRY_POINT_GROUP = PROJECT
DISABLE_ENV = "RLENGINE_DISABLE_PLUGINS"
TRACE_ENV = "RLENGINE_TRACE_PLUGINS"


@attrs.frozen
class PluginInfo:
    """A loaded plugin and where it came from."""

    name: str
    distribution: str
    version: str
    module: str


@attrs.frozen
class PluginFailure:
    """A plugin that could not be loaded or registered."""

    name: str
    distribution: str
    version: str
    message: str  # one line
    traceback: str

    def error(self) -> PluginError:
        return PluginError(self.message)


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

    @property
    def hook(self) -> Any:
        """``manager.hook``, but an implementation that raises becomes a PluginError naming it."""
        return GuardedHooks(self)

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
    for name, module in BUILTIN_PLUGINS:
        if name not in skip:
            plugin = load_builtin(module)
            _register(pm, name, plugin, PluginInfo(name, BUILTIN_DISTRIBUTION, CORE_VERSION, module), infos,
                      failures)
    if load_entry_points:
        for ep in _entry_points(failures):
            if ep.name not in skip:
                _load_entry_point(pm, ep, infos, failures)
    for name, plugin in extra_plugins:
        if name not in skip:
            _register(pm, name, plugin, PluginInfo(name, "in-process", "", _module_of(plugin)), infos, failures)
    _check_pending(pm, infos, failures)
    registries = Registries()
    for info in list(infos):
        _run_registration(pm, info, registries, infos, failures)
    return Plugins(pm, registries, infos, failures, recipe=PluginRecipe.of(skip, extra_plugins, load_entry_points))


def rebuild_plugins(recipe: PluginRecipe) -> Plugins:
    """A fresh manager with the plugins of the run that wrote ``recipe`` (in another process)."""
    return build_plugins(recipe.disabled, recipe.extra_plugins(), recipe.load_entry_points)


def _entry_points(failures: list) -> list[md.EntryPoint]:
    """The group's entry points, one per name.

    The same distribution found twice on the path is loaded once; two
    different distributions claiming one name are both refused, since
    silently preferring either would hide the other.
    """
    by_name: dict[str, list[md.EntryPoint]] = {}
    for ep in md.entry_points(group=ENTRY_POINT_GROUP):
        same = [e for e in by_name.get(ep.name, []) if _dist_of(e) == _dist_of(ep)]
        if not same:
            by_name.setdefault(ep.name, []).append(ep)
    unique = []
    for name, eps in sorted(by_name.items()):
        if len(eps) == 1:
            unique.append(eps[0])
            continue
        owners = " and ".join(" ".join(_dist_of(e)).strip() for e in eps)
        failures.append(PluginFailure(name, _dist_of(eps[0])[0], _dist_of(eps[0])[1],
                                      f"entry point {name!r} is declared by both {owners}; uninstall one", ""))
    return unique


def _dist_of(ep: md.EntryPoint) -> tuple[str, str]:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return "(unknown)", ""
    return dist.metadata["Name"], dist.version


def _load_entry_point(pm, ep, infos, failures) -> None:
    dist, version = _dist_of(ep)
    try:
        with tensorflow_start_up_dropped():  # a plugin that imports TensorFlow at its top stays quiet
            plugin = ep.load()
    except Exception as exc:  # any import error must not stop other plugins
        failures.append(_failure(ep.name, dist, version, f"could not import entry point {ep.value!r}", exc))
        return
    _register(pm, ep.name, plugin, PluginInfo(ep.name, dist, version, _module_of(plugin)), infos, failures)


def api_mismatch(plugin: Any, provided: str) -> Optional[str]:
    """Why ``plugin`` cannot run on this core's API, or None.

    A plugin may declare ``RLENGINE_API_VERSION = "MAJOR.MINOR"``: the
    version of the hooks and interfaces it was written against. It runs when
    the major numbers match and the core's minor is at least the plugin's.
    """
    wanted = getattr(plugin, "RLENGINE_API_VERSION", None)
    if wanted is None:
        return None
    try:
        want_major, want_minor = (int(x) for x in str(wanted).split("."))
    except ValueError:
        return f"declares RLENGINE_API_VERSION = {wanted!r}, which is not 'MAJOR.MINOR'"
    have_major, have_minor = (int(x) for x in provided.split("."))
    if want_major != have_major or want_minor > have_minor:
        return f"needs rlengine API {wanted}, but this rlengine provides API {provided}; upgrade one of them"
    return None


def _register(pm, name, plugin, info, infos, failures) -> None:
    why = api_mismatch(plugin, API_VERSION) or _unhashable(plugin)
    if why is not None:
        origin = f"{info.distribution} {info.version}".strip()
        failures.append(PluginFailure(name, info.distribution, info.version, f"plugin {name!r} ({origin}) {why}", ""))
        return
    try:
        pm.register(plugin, name=name)
    except Exception as exc:  # pluggy validates hook names and arguments here
        if pm.get_plugin(name) is not None:  # pluggy >= 1.6 keeps it registered when validation fails
            pm.unregister(name=name)
        failures.append(_failure(name, info.distribution, info.version, "has an invalid hook", exc))
        return
    infos.append(info)


def _unhashable(plugin: Any) -> Optional[str]:
    """Why pluggy cannot hold ``plugin`` (it keys its tables by the object), or None."""
    try:
        hash(plugin)
    except TypeError:
        return (f"is a {type(plugin).__name__} object, which is not hashable (an attrs or dataclass class "
                "with eq=True drops __hash__); pass a module, a class, or an object whose class keeps the "
                "default __hash__ (e.g. @attrs.define(eq=False))")
    return None


def _check_pending(pm, infos, failures) -> None:
    # check_pending() stops at the first bad plugin; drop it and try again.
    while True:
        try:
            pm.check_pending()
            return
        except pluggy.PluginValidationError as exc:
            name = pm.get_name(exc.plugin)
            pm.unregister(exc.plugin)
            info = next(i for i in infos if i.name == name)
            infos.remove(info)
            failures.append(_failure(name, info.distribution, info.version, "implements an unknown hook", exc))


def _run_registration(pm, info, registries, infos, failures) -> None:
    """Call one plugin's registration hooks, attributing each name to it."""
    plugin = pm.get_plugin(info.name)
    others = [p for p in pm.get_plugins() if p is not plugin]
    for kind in KINDS:
        caller = pm.subset_hook_caller(kind.hook, remove_plugins=others)
        try:
            caller(register=registries[kind.name].register_for(info.name))
        except Exception as exc:
            _unregister_names(registries, info.name)
            pm.unregister(plugin)
            infos.remove(info)
            failures.append(_failure(info.name, info.distribution, info.version, f"failed to register (in {kind.hook})", exc))
            return


def _unregister_names(registries: Registries, plugin: str) -> None:
    for kind in KINDS:
        registries[kind.name].remove_plugin(plugin)


def _failure(name: str, dist: str, version: str, what: str, exc: BaseException) -> PluginFailure:
    origin = f"{dist} {version}".strip()
    message = f"plugin {name!r} ({origin}) {what}: {type(exc).__name__}: {one_line(exc)}".rstrip(": ")
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return PluginFailure(name, dist, version, message, tb)


def _module_of(plugin: Any) -> str:
    return getattr(plugin, "__name__", None) or type(plugin).__module__


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
