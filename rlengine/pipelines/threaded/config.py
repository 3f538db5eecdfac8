"""The async pipeline's settings (TOML section ``[async]``) and the env-thread layout they give."""

from __future__ import annotations

from typing import Any

import attrs

from rlengine.errors import ConfigError

_positive = attrs.validators.gt(0)
_non_negative = attrs.validators.ge(0)


@attrs.define(kw_only=True)
class AsyncConfig:
    """The asynchronous pipeline's settings (TOML section ``[async]``; used when train.pipeline = "async")."""

    num_env_threads: int = attrs.field(default=4, validator=_positive)  # threads, each stepping one batched env
    # env thread i asks actor i % this; 0: each env thread acts itself (nothing to batch over threads)
    num_actor_threads: int = attrs.field(default=1, validator=_non_negative)
    env_batch_sizes: list = attrs.field(factory=list)  # copies per env thread; empty: train.num_envs split evenly
    first_env_ids: list = attrs.field(factory=list)  # env id of each thread's first copy; empty: consecutive
    actor_queue_capacity: int = attrs.field(default=0, validator=_non_negative)  # requests; 0: env threads served
    learner_queue_capacity: int = attrs.field(default=2, validator=_positive)  # unrolls waiting for the learner
    max_policy_lag: int = attrs.field(default=8, validator=_non_negative)  # on-policy: older unrolls are dropped



def thread_layout(cfg: Any, async_cfg: Any, on_policy: bool) -> list[tuple[int, int]]:
    """``(batch_size, first_env_id)`` of each env thread, after checking the settings can run.

    Every copy of the run gets a unique env id in ``0..num_envs-1`` (the
    replay buffer keeps one ring per id), and no setting may leave a thread
    waiting forever or an on-policy learner dropping everything.
    """
    threads = async_cfg.num_env_threads
    sizes = list(async_cfg.env_batch_sizes) or _even_split(cfg.num_envs, threads)
    if len(sizes) != threads or sum(sizes) != cfg.num_envs or min(sizes) < 1:
        raise ConfigError(f"async.env_batch_sizes = {sizes} must have async.num_env_threads = {threads} "
                          f"positive entries summing to train.num_envs = {cfg.num_envs}")
    firsts = list(async_cfg.first_env_ids) or [sum(sizes[:i]) for i in range(threads)]
    ids = sorted(i for first, size in zip(firsts, sizes) for i in range(first, first + size))
    if len(firsts) != threads or ids != list(range(cfg.num_envs)):
        raise ConfigError(f"async.first_env_ids = {firsts} must give each of the {threads} env threads its own "
                          f"ids so that together they number the copies 0..{cfg.num_envs - 1} once each; "
                          "leave it empty for consecutive ids")
    if async_cfg.num_actor_threads > threads:
        raise ConfigError(f"async.num_actor_threads = {async_cfg.num_actor_threads} exceeds async.num_env_threads "
                          f"= {threads}: an actor would serve no env thread; lower it")
    if on_policy and async_cfg.max_policy_lag < threads + async_cfg.learner_queue_capacity - 1:
        raise ConfigError(
            f"async.max_policy_lag = {async_cfg.max_policy_lag} is below num_env_threads + learner_queue_capacity - 1"
            f" = {threads + async_cfg.learner_queue_capacity - 1}, the lag unrolls reach while they wait their "
            "turn, so most would be dropped; raise it or lower async.learner_queue_capacity")
    return list(zip(sizes, firsts))


def _even_split(num_envs: int, threads: int) -> list:
    if num_envs % threads:
        raise ConfigError(f"train.num_envs = {num_envs} does not split evenly over async.num_env_threads = "
                          f"{threads}; change one, or give async.env_batch_sizes")
    return [num_envs // threads] * threads
