"""Presets: tuned settings of one (algorithm, environment) pair, shipped by plugins as TOML files.

A plugin registers ``register("<algorithm>/<env id>", path)`` in
``rlengine_register_presets``; the file is a whole config (``[train]`` with
the algorithm, env, copies, unroll length and budget, plus the algorithm's
section). A run given no config, whose overrides name its algorithm or env
(``rlengine train --algorithm sac --env Pendulum-v1``, or ``Engine(None,
["train.algorithm=sac", ...])``), starts from the preset of that pair when
one is registered; its overrides apply on top. A config file (or dict) is
used as it is, and no overrides at all give the embedded demo. A graph
environment that names its Python twin (``GraphEnvironment.twin_of``: ``tf/CartPole-v1``
is ``CartPole-v1``'s) takes the twin's preset when none names its own id.

:func:`starting_config` is that choice, for :class:`rlengine.Engine` and for
the ``--seeds`` parent alike. This module imports nothing of the plugin host:
it is handed the preset registry (anything with ``in`` and ``get(name)``
returning an entry with ``obj``, the path, and ``plugin``), and the graph
environments' registry (whose entries' ``obj`` is the class) to find twins.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, Iterator, Mapping, Optional, Protocol, Union

import attrs

from rlengine.config.loading import DEFAULT_CONFIG, apply_overrides, read_toml
from rlengine.config.schema import TrainConfig
from rlengine.errors import ConfigError, RegistryError

NO_PRESET_FLAG = "--no-preset"
ConfigSource = Union[None, str, "os.PathLike[str]", Mapping[str, Any]]


class PresetRegistry(Protocol):
    """The registry of the ``preset`` kind, as this module uses it."""

    def __contains__(self, name: str) -> bool: ...

    def get(self, name: str) -> Any: ...  # an entry: ``obj`` (the path) and ``plugin`` (who registered it)


GraphEnvironmentRegistry = PresetRegistry  # the same two methods; an entry's ``obj`` is the class


def preset_name(algorithm: Any, env: Any) -> str:
    """The registered name of the preset of a pair: ``"<algorithm>/<env id>"``."""
    return f"{algorithm}/{env}"


@attrs.frozen
class Preset:
    """One registered preset file, and the plugin that registered it."""

    name: str  # "<algorithm>/<env id>"
    path: str
    plugin: str
    serves: Optional[str] = None  # the graph environment's id, when the preset is its twin's

    def read(self) -> dict:
        """The file's tables; its ``[train]`` must name the pair it is registered for."""
        raw = read_toml(self.path)
        train = raw.get("train")
        algorithm, _, env = self.name.partition("/")
        found = (train.get("algorithm"), train.get("env")) if isinstance(train, dict) else (None, None)
        if found != (algorithm, env):
            raise ConfigError(f"preset {self.name} of plugin {self.plugin!r} ({self.path}) sets train.algorithm = "
                              f"{found[0]!r} and train.env = {found[1]!r}; a preset must set both to the pair it "
                              f"is registered for ({algorithm!r}, {env!r}): fix the file or its registered name")
        return raw

    def summary(self) -> str:
        """The first line of the file's header comment (where its settings come from), or ''."""
        try:
            with open(self.path, encoding="utf-8") as f:
                first = f.readline().strip()
        except OSError:
            return ""
        return first.lstrip("#").strip() if first.startswith("#") else ""

    def announcement(self) -> str:
        """The one line ``rlengine train`` prints when the preset is used."""
        twin = f", for {self.serves}, its twin" if self.serves else ""
        return (f"rlengine: settings from the preset {self.name} (plugin {self.plugin!r}{twin}); "
                f"{NO_PRESET_FLAG} for plain defaults")

    def origin(self) -> str:
        """``the preset NAME (plugin 'P', PATH)``, as config.toml's header and error messages name it."""
        return f"the preset {self.name} (plugin {self.plugin!r}, {self.path})"


def find_preset(algorithm: Any, env: Any, presets: PresetRegistry,
                graph_environments: Optional[GraphEnvironmentRegistry] = None) -> Optional[Preset]:
    """The preset registered for the pair, else the one of ``env``'s twin when it is a graph environment
    (``graph_environments``: their registry) that names one, or None."""
    name = preset_name(algorithm, env)
    if name not in presets:
        twin = twin_of(env, graph_environments)
        found = None if twin is None else find_preset(algorithm, twin, presets)
        return None if found is None else attrs.evolve(found, serves=env)
    entry = presets.get(name)
    path = entry.obj
    if not isinstance(path, (str, os.PathLike)):
        raise RegistryError(f"plugin {entry.plugin!r} registered preset {name!r} as {path!r}, which is not the "
                            "path of a TOML file: register a pathlib.Path")
    return Preset(name, os.fspath(path), entry.plugin)


def twin_of(env: Any, graph_environments: Optional[GraphEnvironmentRegistry]) -> Optional[str]:
    """The id of the Python environment the graph environment ``env`` reproduces (its ``twin_of``), or None."""
    if graph_environments is None or not isinstance(env, str) or env not in graph_environments:
        return None
    return getattr(graph_environments.get(env).obj, "twin_of", None)


def chooses_algorithm_or_env(overrides: list) -> bool:
    """Whether the overrides set ``train.algorithm`` or ``train.env`` (then the demo config is not wanted)."""
    return any(o.split("=", 1)[0].strip() in ("train.algorithm", "train.env") for o in overrides)


def starting_config(config: ConfigSource, overrides: list, presets: Optional[PresetRegistry] = None,
                    graph_environments: Optional[GraphEnvironmentRegistry] = None) -> tuple[dict, Optional[Preset]]:
    """The raw tables a run starts from, before its overrides, and the preset they came from (or None).

    ``config`` is a TOML file's path or a dict of tables (used as given), or
    None: then the embedded demo, unless the overrides choose an algorithm or
    env: then the preset of that pair from ``presets`` (None: presets off), or
    of the env's twin (:func:`find_preset`), and without one every setting's
    default (``{}``).
    """
    if isinstance(config, (str, os.PathLike)):
        return read_toml(os.fspath(config)), None
    if config is not None:
        return dict(config), None
    if not chooses_algorithm_or_env(overrides):
        return read_toml(DEFAULT_CONFIG), None  # the demo: PPO tuned for CartPole-v1
    if presets is not None:
        train = apply_overrides({}, overrides).get("train", {})
        defaults = TrainConfig()
        preset = find_preset(train.get("algorithm", defaults.algorithm), train.get("env", defaults.env), presets,
                             graph_environments)
        if preset is not None:
            return preset.read(), preset
    return {}, None


@contextlib.contextmanager
def naming_preset(preset: Optional[Preset]) -> Iterator[None]:
    """Config and registry errors raised inside end by naming the preset the run's settings came from."""
    try:
        yield
    except (ConfigError, RegistryError) as exc:
        if preset is not None:  # the same error, its one line extended
            exc.args = (f"{exc} (the settings come from {preset.origin()}; {NO_PRESET_FLAG} for plain defaults)",)
        raise
