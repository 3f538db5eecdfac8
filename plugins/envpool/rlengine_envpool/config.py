"""``EnvPoolConfig``: the ``[envpool]`` section of a run's config."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import attrs

from rlengine import ConfigError

__all__ = ["EnvPoolConfig", "threads_for"]

#: Keys the plugin sets itself: the copies, their seeds and the thread count have keys of their own.
RESERVED_MAKE_KWARGS = ("num_envs", "batch_size", "seed", "num_threads")


def _check_num_threads(_inst: Any, _attr: Any, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"[envpool] num_threads must be an integer >= 0 (0: one per CPU core, at most one per "
                          f"copy), got {value!r}")


def _check_make_kwargs(_inst: Any, _attr: Any, value: Any) -> None:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise ConfigError(f"[envpool] make_kwargs must be a table of keyword arguments, got {value!r}")
    reserved = sorted(set(RESERVED_MAKE_KWARGS) & set(value))
    if reserved:
        raise ConfigError(f"[envpool] make_kwargs must not set {reserved[0]!r}: the copies are train.num_envs, "
                          f"their seeds come from train.seed and the threads are [envpool] num_threads")


@attrs.frozen
class EnvPoolConfig:
    """The ``[envpool]`` section of a run's config."""

    #: EnvPool's C++ threads per environment (0: one per CPU core, at most one per copy).
    num_threads: int = attrs.field(default=0, validator=_check_num_threads)
    #: Extra keyword arguments for ``envpool.make_gymnasium`` (e.g. ``{max_episode_steps = 200}``).
    make_kwargs: dict = attrs.field(factory=dict, validator=_check_make_kwargs)
    #: Set by the engine for evaluation copies: Atari then plays whole games with the raw score.
    evaluation: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))


def threads_for(config: EnvPoolConfig, num_envs: int) -> int:
    """The thread count ``config`` gives an environment of ``num_envs`` copies."""
    if config.num_threads:
        return config.num_threads
    return max(1, min(num_envs, os.cpu_count() or 1))
