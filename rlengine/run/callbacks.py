"""A run's callbacks: lifecycle-hook classes with a config section of their own, one instance per run.

A plugin registers a class with ``rlengine_register_callbacks``; its methods
implement lifecycle hooks with ``@hookimpl``, and its optional
``config_class`` makes the TOML section named like the callback. When a run
starts training the engine makes one instance of every callback,
``cls(section)``, and registers it with the run's plugin manager, so pluggy
calls it like any plugin; it is unregistered when the run ends, however it
ends, so a plugin manager reused for another run (tests, notebooks) starts
clean.

Writers are opted in by ``train.writers`` because a run chooses its outputs.
Callbacks are opted out by ``train.disabled_callbacks`` instead: installing a
plugin is what asks for its hooks (as it always was for hooks in plugin
modules), and the list names those a run leaves out, one by one, while the
rest of their plugin stays. Like ``train.writers`` it lives in ``[train]``,
names registered names, and a name nobody registered is refused with close
matches.
"""

from __future__ import annotations

from typing import Any, Iterable

from rlengine.api.noconfig import NoConfig
from rlengine.config import RunConfig
from rlengine.errors import ConfigError, PluginError, RegistryError, close_matches, one_line
from rlengine.plugin.manager import ActiveCallback, Plugins, callback_switch_off
from rlengine.plugin.registry import Entry

#: The hooks a callback may implement: those called while its run is in progress.
LIFECYCLE_HOOKS = ("rlengine_train_start", "rlengine_iteration_end", "rlengine_evaluation_end",
                   "rlengine_checkpoint_saved", "rlengine_train_end")
#: The plugin manager's name of a callback instance (never an entry point's name).
MANAGER_PREFIX = "callback:"


def manager_name(callback: str) -> str:
    return MANAGER_PREFIX + callback


class RunCallbacks:
    """The callback instances of one run: made by the constructor, registered and unregistered by the engine."""

    def __init__(self, config: RunConfig, plugins: Plugins):
        self.plugins = plugins
        registry = plugins.registries.callbacks
        disabled = set(config.train.disabled_callbacks)
        check_disabled_names(config.train.disabled_callbacks, registry.names())
        # made before anything is registered: a callback that cannot be made leaves the manager as it was
        self.pending = [(entry, make_callback(entry, config, plugins)) for entry in registry
                        if entry.name not in disabled]
        self.registered: list[str] = []

    def register(self) -> None:
        """Register every instance for the run, in the order their plugins registered the classes."""
        for entry, instance in self.pending:
            name = manager_name(entry.name)
            try:
                self.plugins.manager.register(instance, name=name)
            except Exception as exc:  # pluggy checks each hookimpl's arguments against its spec here
                if self.plugins.manager.get_plugin(name) is not None:
                    self.plugins.manager.unregister(name=name)
                raise PluginError(f"{_label(entry, self.plugins)} has an invalid hook: "
                                  f"{type(exc).__name__}: {one_line(exc)}") from exc
            self.plugins.callbacks[name] = ActiveCallback(entry.name, entry.plugin)
            self.registered.append(name)

    def unregister(self) -> None:
        """Take this run's instances off the manager again; never raises (it runs on every way out)."""
        for name in reversed(self.registered):
            if self.plugins.manager.get_plugin(name) is not None:
                self.plugins.manager.unregister(name=name)
            self.plugins.callbacks.pop(name, None)
        self.registered = []


def check_disabled_names(disabled: Iterable[Any], registered: list[str]) -> None:
    """Refuse a ``train.disabled_callbacks`` entry that names no registered callback."""
    for name in disabled:
        if not isinstance(name, str) or name not in registered:
            raise ConfigError(
                f"train.disabled_callbacks names {name!r}, which is no registered callback; registered: "
                f"{', '.join(registered) or 'none'}." + (close_matches(name, registered) if isinstance(name, str) else ""))


def make_callback(entry: Entry, config: RunConfig, plugins: Plugins) -> Any:
    """An instance of the callback class ``entry`` names, made with its config section."""
    cls = entry.obj  # a lazy "module:Class" is imported here, with a one-line error if it cannot be
    if not isinstance(cls, type):
        raise RegistryError(f"{_label(entry, plugins)} is registered as {cls!r}, which is not a class: register the class "
                            "(the engine makes one instance per run)")
    check_hooks(entry, cls, plugins)
    config_class = getattr(cls, "config_class", None) or NoConfig
    section = config.section(entry.name, config_class)
    try:
        instance = cls(section)
    except Exception as exc:
        raise PluginError(f"{_label(entry, plugins)} could not be made for the run: {type(exc).__name__}: "
                          f"{one_line(exc)} (fix or update the plugin, or {callback_switch_off(entry.name)})") from exc
    try:
        hash(instance)  # pluggy keys its tables by the object
    except TypeError:
        raise RegistryError(f"{_label(entry, plugins)} makes {type(instance).__name__} objects, which are not hashable "
                            "(an attrs or dataclass class with eq=True drops __hash__): keep the default "
                            "__hash__, e.g. with @attrs.define(eq=False)") from None
    return instance


def check_hooks(entry: Entry, cls: type, plugins: Plugins) -> None:
    """A callback implements at least one hook, and only lifecycle hooks."""
    hooks = [name for name in dir(cls) if name.startswith("rlengine_")
             and plugins.manager.parse_hookimpl_opts(cls, name) is not None]
    wrong = [name for name in hooks if name not in LIFECYCLE_HOOKS]
    if wrong:
        raise RegistryError(f"{_label(entry, plugins)} implements {wrong[0]}, which a callback cannot: a callback exists "
                            f"only while its run trains, so it may implement {', '.join(LIFECYCLE_HOOKS)} "
                            f"(implement {wrong[0]} in the plugin's module instead)")
    if not hooks:
        raise RegistryError(f"{_label(entry, plugins)} implements no lifecycle hook: decorate a method named like one "
                            f"({', '.join(LIFECYCLE_HOOKS)}) with @rlengine.hookimpl")


def _label(entry: Entry, plugins: Plugins) -> str:
    return plugins.callback_label(entry.name, entry.plugin)
