"""Name -> class registries, filled by the ``rlengine_register_*`` hooks.

:data:`KINDS` is the one table of plugin kinds: the plugin manager calls
each kind's hook, the CLI lists them, the config builder gives the kinds
with sections a TOML section each, the reference generator documents them.
A new kind is one row here plus its hook spec.

The core owns the ``register`` callables, so every check lives here: unique
names per kind, the right base class, and helpful errors for unknown names.
A plugin may register a ``"module:attribute"`` string instead of a class:
it is imported, and checked, on first use (``rlengine plugins`` and
``--help`` import no plugin class).
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Iterator, Optional

import attrs

from rlengine.errors import RegistryError, close_matches


@attrs.frozen
class Kind:
    """One kind of plugin."""

    name: str  # singular, as in error messages ("algorithm")
    plural: str  # as in the hook name and the `rlengine plugins` listing ("algorithms")
    base: Optional[str]  # "module:Class" every registered class must subclass; None: checked elsewhere
    has_section: bool  # registered names are TOML sections of the class's config_class

    @property
    def hook(self) -> str:
        return f"rlengine_register_{self.plural}"


KINDS = (
    Kind("algorithm", "algorithms", "rlengine.api.algorithm:Algorithm", True),
    Kind("environment", "environments", "rlengine.api.environment:Environment", True),
    # TensorFlow environments, registered under the env ids they serve ("tf/CartPole-v1")
    Kind("graph_environment", "graph_environments", "rlengine.api.graph_environment:GraphEnvironment", True),
    Kind("transformer", "transformers", "rlengine.api.transformer:ObservationTransformer", True),
    Kind("writer", "writers", "rlengine.api.writer:SummaryWriter", True),
    Kind("pipeline", "pipelines", "rlengine.api.pipeline:Pipeline", True),
    Kind("distribution", "distributions", None, False),  # checked by rlengine.collect.converters
    Kind("command", "commands", "rlengine.api.command:Command", False),
    # a class whose instances implement lifecycle hooks, made once per run: checked by rlengine.run.callbacks
    Kind("callback", "callbacks", None, True),
    # encoders: observation nest -> features; algorithms name them in their config
    Kind("network", "networks", "rlengine.api.network:Encoder", True),
    # tuned settings of an "<algorithm>/<env id>" pair: the pathlib.Path of a TOML config (rlengine.config.presets)
    Kind("preset", "presets", None, False),
)
KIND_NAMES = tuple(kind.name for kind in KINDS)
KIND_BY_NAME = {kind.name: kind for kind in KINDS}


def config_section_kinds() -> list[str]:
    """Kinds whose registered names are config sections."""
    return [kind.name for kind in KINDS if kind.has_section]


def load_reference(reference: str) -> Any:
    """The object a ``"module:attribute"`` string names."""
    module, _, attribute = reference.partition(":")
    obj: Any = importlib.import_module(module)
    for part in attribute.split(".") if attribute else []:
        obj = obj[part] if isinstance(obj, dict) else getattr(obj, part)
    return obj


@attrs.define
class Entry:
    """One registered object and the plugin that registered it; ``obj`` loads a lazy reference."""

    name: str
    reference: Any  # the object, or a "module:attribute" string
    plugin: str
    extra: tuple = ()
    kind: Optional[Kind] = attrs.field(default=None, eq=False, repr=False)  # None: no base to check
    _loaded: Any = attrs.field(default=None, eq=False, repr=False)

    @property
    def kind_name(self) -> str:
        return self.kind.name if self.kind is not None else "object"

    @property
    def lazy(self) -> bool:
        return isinstance(self.reference, str)

    @property
    def obj(self) -> Any:
        if not self.lazy:
            return self.reference
        if self._loaded is None:
            try:
                loaded = load_reference(self.reference)
            except Exception as exc:
                raise RegistryError(
                    f"plugin {self.plugin!r} registered {self.kind_name} {self.name!r} as {self.reference!r}, "
                    f"which cannot be imported: {type(exc).__name__}: {exc}{_install_hint(exc, self.reference)}"
                ) from exc
            _check_base(self, loaded)
            self._loaded = loaded
        return self._loaded


def _install_hint(error: Exception, reference: str) -> str:
    """How to get a module the registered class imports and the process lacks ('' for any other error)."""
    missing = getattr(error, "name", None) if isinstance(error, ModuleNotFoundError) else None
    if not missing or reference.partition(":")[0].startswith(missing):  # the plugin's own module: a wrong string
        return ""
    return (f"; it needs the package that provides {missing!r}: install it (pip install {missing.split('.')[0]}, "
            "if that is its name), or reinstall the plugin with its dependencies")


def _check_base(entry: Entry, obj: Any) -> None:
    if entry.kind is None or entry.kind.base is None:
        return
    base = load_reference(entry.kind.base)
    if not (isinstance(obj, type) and issubclass(obj, base)):
        raise RegistryError(
            f"plugin {entry.plugin!r} registered {entry.kind.name} {entry.name!r} as {obj!r}, "
            f"which is not a subclass of rlengine.{base.__name__}")


class Registry:
    """The registry of one plugin kind (e.g. ``algorithm``)."""

    def __init__(self, kind: Kind, failed_plugins: Optional[list] = None, clashes: Optional[list] = None):
        self.kind = kind
        #: (plugin, one line) of each name a plugin registered after another plugin had
        self.clashes: list = [] if clashes is None else clashes
        self._entries: dict[str, Entry] = {}
        self._contested: dict[str, str] = {}  # name -> why two plugins' claims on it are refused
        #: one line for each plugin that could not be loaded: an unknown name may be one of theirs
        self.failed_plugins: list = [] if failed_plugins is None else failed_plugins

    def register_for(self, plugin: str) -> Callable[..., None]:
        """A ``register(name, obj, *extra)`` callable that records ``plugin``."""

        def register(name: str, obj: Any, *extra: Any) -> None:
            self.add(Entry(name, obj, plugin, extra, self.kind))

        return register

    def add(self, entry: Entry) -> None:
        entry.kind = self.kind
        if not isinstance(entry.name, str) or not entry.name:
            raise RegistryError(
                f"plugin {entry.plugin!r} registered a {self.kind.name} with a name that is not a "
                f"non-empty string: {entry.name!r}"
            )
        if not entry.lazy:
            _check_base(entry, entry.reference)
        elif ":" not in entry.reference:
            what = f"a subclass of rlengine.{self.kind.base.rpartition(':')[2]}" if self.kind.base else "an object"
            raise RegistryError(
                f"plugin {entry.plugin!r} registered {self.kind.name} {entry.name!r} as {entry.reference!r}, "
                f"which is not {what} (nor a 'module:Class' reference to one)")
        if entry.name in self._entries:
            first = self._entries[entry.name].plugin
            clash = (f"{self.kind.name} {entry.name!r} is registered by both plugin {first!r} and plugin "
                     f"{entry.plugin!r}; disable one with --disable-plugin {first} or --disable-plugin {entry.plugin}")
            # the plugin's other names stay; a run naming this one may have meant either: it is refused
            self._contested[entry.name] = clash
            self.clashes.append((entry.plugin, clash))
            return
        self._entries[entry.name] = entry

    def get(self, name: str) -> Entry:
        if name in self._contested:
            raise RegistryError(self._contested[name])
        try:
            return self._entries[name]
        except KeyError:
            raise RegistryError(
                f"unknown {self.kind.name} {name!r}; available: {', '.join(sorted(self._entries)) or 'none'}."
                + close_matches(name, self._entries) + self._not_loaded()
            ) from None

    def _not_loaded(self) -> str:
        if not self.failed_plugins:
            return ""
        return (" Not loaded, so perhaps the one that registers it: " + "; ".join(self.failed_plugins)
                + " (--debug shows the traceback)")

    def __contains__(self, name: str) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[Entry]:
        return iter(self._entries.values())

    def remove_plugin(self, plugin: str) -> None:
        """Forget every name ``plugin`` registered (its registration failed half-way)."""
        self._entries = {n: e for n, e in self._entries.items() if e.plugin != plugin}

    def names(self) -> list[str]:
        return sorted(self._entries)


class Registries:
    """The registries of a run, one per kind of :data:`KINDS`."""

    def __init__(self) -> None:
        self.failed_plugins: list = []  # one line per plugin that could not be loaded, shared by every kind
        self.clashes: list = []  # (plugin, one line) per name registered twice, shared by every kind
        self.by_kind = {kind.name: Registry(kind, self.failed_plugins, self.clashes) for kind in KINDS}

    def __getitem__(self, kind: str) -> Registry:
        return self.by_kind[kind]

    def __getattr__(self, plural: str) -> Registry:  # registries.algorithms, registries.pipelines, ...
        for kind in KINDS:
            if kind.plural == plural:
                return self.by_kind[kind.name]
        raise AttributeError(plural)
