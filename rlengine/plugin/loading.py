"""Loading one plugin into a pluggy manager, and recording why one could not be.

:func:`~rlengine.plugin.manager.build_plugins` calls these steps in order::

    register(pm, name, plugin, info, infos, failures)    # each built-in plugin
    for ep in entry_points(failures):                    # unless load_entry_points=False
        load_entry_point(pm, ep, infos, failures)        # imports it, then register()
    register(pm, name, plugin, info, infos, failures)    # each in-process plugin
    check_pending(pm, infos, failures)
    for info in list(infos):
        run_registration(pm, info, registries, infos, failures)

Every step appends what loaded to ``infos`` (a :class:`PluginInfo`) and what
did not to ``failures`` (a :class:`PluginFailure`, one line naming the plugin
and its distribution), and never raises for a plugin's fault, so one broken
plugin leaves the others loaded.
"""

from __future__ import annotations

import importlib.metadata as md
import traceback
from typing import Any, Optional

import attrs
import pluggy

from rlengine.errors import PluginError, one_line
from rlengine.plugin.markers import API_VERSION, PROJECT
from rlengine.plugin.registry import KINDS, Registries
from rlengine.quiet_tensorflow import tensorflow_start_up_dropped

ENTRY_POINT_GROUP = PROJECT


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


def entry_points(failures: list) -> list[md.EntryPoint]:
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


def load_entry_point(pm, ep, infos, failures, notices: Optional[list] = None) -> None:
    dist, version = _dist_of(ep)
    try:
        with tensorflow_start_up_dropped():  # a plugin that imports TensorFlow at its top stays quiet
            plugin = ep.load()
    except Exception as exc:  # any import error must not stop other plugins
        failures.append(_failure(ep.name, dist, version, f"could not import entry point {ep.value!r}", exc))
        return
    if notices is not None and getattr(plugin, "RLENGINE_API_VERSION", None) is None:
        origin = f"{dist} {version}".strip()
        notices.append(f"plugin {ep.name!r} ({origin}) declares no RLENGINE_API_VERSION, so a core it does not "
                       f"fit cannot say so; its module {module_of(plugin)!r} should set RLENGINE_API_VERSION = "
                       f"\"{API_VERSION}\" (the API it is written against)")
    register(pm, ep.name, plugin, PluginInfo(ep.name, dist, version, module_of(plugin)), infos, failures)


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


def register(pm, name, plugin, info, infos, failures) -> None:
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


def check_pending(pm, infos, failures) -> None:
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


def run_registration(pm, info, registries, infos, failures) -> None:
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


def module_of(plugin: Any) -> str:
    return getattr(plugin, "__name__", None) or type(plugin).__module__
