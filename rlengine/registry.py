"""Name -> class registries, filled by the ``rlengine_register_*`` hooks.

The core owns the ``register`` callables, so every check lives here: unique
names per kind, the right base class, and helpful errors for unknown names.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Optional

import attrs

from rlengine.errors import RegistryError, close_matches


@attrs.frozen
class Entry:
    """One registered object and the plugin that registered it."""

    name: str
    obj: Any
    plugin: str
    extra: tuple = ()


class Registry:
    """The registry of one plugin kind (e.g. ``algorithm``)."""

    def __init__(self, kind: str, base: Optional[type]):
        self.kind = kind
        self.base = base
        self._entries: dict[str, Entry] = {}

    def register_for(self, plugin: str) -> Callable[..., None]:
        """A ``register(name, obj, *extra)`` callable that records ``plugin``."""

        def register(name: str, obj: Any, *extra: Any) -> None:
            self.add(Entry(name, obj, plugin, extra))

        return register

    def add(self, entry: Entry) -> None:
        if not isinstance(entry.name, str) or not entry.name:
            raise RegistryError(
                f"plugin {entry.plugin!r} registered a {self.kind} with a name that is not a "
                f"non-empty string: {entry.name!r}"
            )
        if self.base is not None and not (isinstance(entry.obj, type) and issubclass(entry.obj, self.base)):
            raise RegistryError(
                f"plugin {entry.plugin!r} registered {self.kind} {entry.name!r} as {entry.obj!r}, "
                f"which is not a subclass of rlengine.{self.base.__name__}"
            )
        if entry.name in self._entries:
            first = self._entries[entry.name].plugin
            raise RegistryError(
                f"{self.kind} {entry.name!r} is registered by both plugin {first!r} and plugin "
                f"{entry.plugin!r}; disable one with --disable-plugin NAME"
            )
        self._entries[entry.name] = entry

    def get(self, name: str) -> Entry:
        try:
            return self._entries[name]
        except KeyError:
            raise RegistryError(
                f"unknown {self.kind} {name!r}; available: {', '.join(sorted(self._entries)) or 'none'}."
                + close_matches(name, self._entries)
            ) from None

    def __contains__(self, name: str) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[Entry]:
        return iter(self._entries.values())

    def remove_plugin(self, plugin: str) -> None:
        """Forget every name ``plugin`` registered (its registration failed half-way)."""
        self._entries = {n: e for n, e in self._entries.items() if e.plugin != plugin}

    def names(self) -> list[str]:
        return sorted(self._entries)


KINDS = ("algorithm", "environment", "transformer", "writer", "distribution")


class Registries:
    """The five registries of a run, keyed by kind."""

    def __init__(self) -> None:
        from rlengine.interfaces import Algorithm, Environment, ObservationTransformer, SummaryWriter

        bases = {
            "algorithm": Algorithm,
            "environment": Environment,
            "transformer": ObservationTransformer,
            "writer": SummaryWriter,
            "distribution": None,  # checked by rlengine.distributions
        }
        self.by_kind = {kind: Registry(kind, bases[kind]) for kind in KINDS}

    def __getitem__(self, kind: str) -> Registry:
        return self.by_kind[kind]

    @property
    def algorithms(self) -> Registry:
        return self.by_kind["algorithm"]

    @property
    def environments(self) -> Registry:
        return self.by_kind["environment"]

    @property
    def transformers(self) -> Registry:
        return self.by_kind["transformer"]

    @property
    def writers(self) -> Registry:
        return self.by_kind["writer"]

    @property
    def distributions(self) -> Registry:
        return self.by_kind["distribution"]
