"""Run configuration: the engine's ``[train]`` section plus one section per plugin.

A run is configured from a TOML file (or the embedded default) plus
``--set section.key=value`` overrides. Each plugin class declares an attrs
``config_class``; its section is the name it was registered under. Every
mistake is a one-line :class:`ConfigError` naming the key.
"""

from __future__ import annotations

import os
import sys
import types
import typing
from typing import Any, Mapping, Optional

import attrs

from rlengine.errors import ConfigError, close_matches, telling_line

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

_positive = attrs.validators.gt(0)
_non_negative = attrs.validators.ge(0)


@attrs.define(kw_only=True)
class TrainConfig:
    """The engine's own settings (TOML section ``[train]``)."""

    algorithm: str = "ppo"  # registered algorithm name
    env: str = "CartPole-v1"  # registered environment name, or an id for env_provider
    env_provider: str = "gym"  # environment class that takes ids not registered by name
    num_envs: int = attrs.field(default=8, validator=_positive)  # copies stepped as one batch
    num_env_steps: int = attrs.field(default=200_000, validator=_positive)  # budget (all copies)
    unroll_length: int = attrs.field(default=32, validator=_positive)  # steps per copy per iteration
    #: seeds Python, NumPy, TensorFlow and the run's generator; training env copy i gets seed + i
    seed: int = attrs.field(default=0, validator=_non_negative)
    transformers: list = attrs.field(factory=list)  # observation transformers, applied in order
    writers: list = attrs.field(factory=lambda: ["console", "tensorboard", "jsonl"])  # summary writers, by name
    summary_interval: int = attrs.field(default=1, validator=_positive)  # iterations between summaries
    eval_interval: int = attrs.field(default=10, validator=_non_negative)  # iterations; 0: never
    #: greedy episodes per evaluation, spread over up to 32 env copies seeded apart from the training ones
    num_eval_episodes: int = attrs.field(default=10, validator=_positive)
    target_return: Optional[float] = None  # stop once evaluation reaches it
    checkpoint_interval: int = attrs.field(default=0, validator=_non_negative)  # iterations; 0: at end only
    keep_checkpoints: int = attrs.field(default=3, validator=_positive)  # newest complete checkpoints kept on disk
    checkpoint_replay: bool = True  # checkpoints hold the replay buffer, so a resumed run keeps its experience
    deterministic: bool = False  # op determinism: resumed runs end with the same weights as uninterrupted ones
    root_dir: str = ""  # empty: runs/<algorithm>-<env>-<time>
    eager: bool = False  # run every tf.function eagerly (debugging)
    replay_on_policy: bool = False  # on-policy algorithms: route each unroll through a replay buffer
    driver: str = attrs.field(default="sync", validator=attrs.validators.in_(("sync", "async")))  # "async": see [async]
    # NaN guard: stop the run after this many updates in a row skipped for a non-finite loss or gradient
    max_nonfinite_updates: int = attrs.field(default=100, validator=_positive)
    # Environment faults: a training env whose step or reset raises is recreated (new seed, same env ids)
    # at most this many times per run, its partial unroll dropped; 0: the first error stops the run
    max_env_restarts: int = attrs.field(default=10, validator=_non_negative)
    # seconds an env step or reset may take before the run stops naming the env (no restart); 0: no limit
    env_step_timeout: float = attrs.field(default=60.0, validator=attrs.validators.ge(0.0))
    check_observations: bool = True  # stop, naming the env and copy, on a NaN or infinite observation or reward


@attrs.define(kw_only=True)
class AsyncConfig:
    """The asynchronous pipeline's settings (TOML section ``[async]``; used when train.driver = "async")."""

    num_env_threads: int = attrs.field(default=4, validator=_positive)  # threads, each stepping one batched env
    # env thread i asks actor i % this; 0: each env thread acts itself (nothing to batch over threads)
    num_actor_threads: int = attrs.field(default=1, validator=_non_negative)
    env_batch_sizes: list = attrs.field(factory=list)  # copies per env thread; empty: train.num_envs split evenly
    first_env_ids: list = attrs.field(factory=list)  # env id of each thread's first copy; empty: consecutive
    actor_queue_capacity: int = attrs.field(default=0, validator=_non_negative)  # requests; 0: env threads served
    learner_queue_capacity: int = attrs.field(default=2, validator=_positive)  # unrolls waiting for the learner
    max_policy_lag: int = attrs.field(default=8, validator=_non_negative)  # on-policy: older unrolls are dropped


#: Sections the engine itself owns (every other section belongs to a plugin).
CORE_SECTIONS = {"train": TrainConfig, "async": AsyncConfig}


@attrs.define
class RunConfig:
    """The whole configuration of one run."""

    train: TrainConfig = attrs.field(factory=TrainConfig)
    #: section name -> attrs config instance of the plugin class registered under it
    sections: dict = attrs.field(factory=dict)

    def section(self, name: str, config_class: type) -> Any:
        """The config of plugin section ``name`` (defaults when absent)."""
        return self.sections.get(name) or config_class()

    def to_dict(self) -> dict:
        out = {"train": _asdict(self.train)}
        out.update({name: _asdict(cfg) for name, cfg in sorted(self.sections.items())})
        return out


DEFAULT_CONFIG = os.path.join(os.path.dirname(__file__), "default.toml")


def read_toml(path: str) -> dict:
    """Parse a TOML file; syntax errors name the file and line."""
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise ConfigError(f"config file {path!r} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path!r} is not valid TOML: {exc}") from None


def apply_overrides(raw: dict, overrides: list[str]) -> dict:
    """Apply ``section.key=value`` strings; values are TOML (bare words are strings)."""
    raw = {k: dict(v) if isinstance(v, dict) else v for k, v in raw.items()}
    for item in overrides:
        key, sep, text = item.partition("=")
        if not sep or "." not in key:
            raise ConfigError(f"--set {item!r} is not of the form section.key=value (e.g. train.seed=3)")
        section, _, name = key.strip().rpartition(".")
        table = raw.setdefault(section, {})
        if not isinstance(table, dict):
            raise ConfigError(f"--set {item!r}: {section!r} is {table!r} in the config, not a [{section}] table")
        table[name] = parse_value(text.strip())
    return raw


def parse_value(text: str) -> Any:
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def build_config(raw: Mapping[str, Any], config_classes: Mapping[str, type]) -> RunConfig:
    """Validate a raw TOML dict against the engine's and the plugins' classes."""
    config_classes = {**config_classes, **{k: v for k, v in CORE_SECTIONS.items() if k != "train"}}
    unknown = [name for name in raw if name != "train" and name not in config_classes]
    if unknown:
        raise ConfigError(
            f"config section [{unknown[0]}] matches no loaded plugin; known sections: "
            f"train, {', '.join(sorted(config_classes))}." + close_matches(unknown[0], ["train", *config_classes])
        )
    train = make_section("train", TrainConfig, raw.get("train", {}))
    sections = {name: make_section(name, config_classes[name], values) for name, values in raw.items()
                if name != "train"}
    return RunConfig(train=train, sections=sections)


def make_section(section: str, cls: type, values: Any) -> Any:
    """Instantiate ``cls`` from ``values``, with one-line errors naming ``section.key``."""
    if not isinstance(values, Mapping):
        raise ConfigError(f"[{section}] must be a table of keys, got {values!r}")
    fields = {f.name: f for f in attrs.fields(cls)}
    hints = typing.get_type_hints(cls)
    for key, value in values.items():
        if key not in fields:
            raise ConfigError(
                f"unknown config key {section}.{key}; [{section}] takes: {', '.join(fields)}."
                + close_matches(key, fields)
            )
        _check_type(f"{section}.{key}", value, hints.get(key, Any))
    try:
        return cls(**values)
    except (TypeError, ValueError) as exc:
        # attrs validators say "'num_envs' must be > 0: 0", which names the key
        raise ConfigError(f"invalid value in [{section}]: {telling_line(str(exc)) or type(exc).__name__}") from None


def _check_type(key: str, value: Any, hint: Any) -> None:
    allowed = _allowed_types(hint)
    if allowed is None:
        return
    # bool is an int subclass in Python, but `num_envs = true` is a mistake.
    if isinstance(value, allowed) and not (isinstance(value, bool) and bool not in allowed):
        return
    names = " or ".join(sorted({t.__name__ for t in allowed}))
    raise ConfigError(f"config key {key} must be {names}, got {value!r} ({type(value).__name__})")


def _allowed_types(hint: Any) -> Optional[tuple]:
    """Python types a TOML value may have for an annotation (None: anything)."""
    origin = typing.get_origin(hint)
    if hint is Any:
        return None
    if origin is typing.Union or origin is types.UnionType:  # Optional[X] and X | None
        parts = [_allowed_types(a) for a in typing.get_args(hint)]
        if any(p is None for p in parts):
            return None
        return tuple(t for p in parts if p is not None for t in p)
    if hint is type(None):
        return (type(None),)
    if hint is float:
        return (float, int)
    if origin in (list, tuple) or hint in (list, tuple):
        return (list, tuple)
    if origin is dict or hint is dict:
        return (dict,)
    return (hint,) if isinstance(hint, type) else None


def _asdict(cfg: Any) -> dict:
    return {k: v for k, v in attrs.asdict(cfg, recurse=False).items() if v is not None}
