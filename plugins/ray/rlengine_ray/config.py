"""The ray pipeline's settings (TOML section ``[ray]``) and the runner layout they give."""

from __future__ import annotations

from typing import Any

import attrs

from rlengine import ConfigError

_positive = attrs.validators.gt(0)
_non_negative = attrs.validators.ge(0)


@attrs.define(kw_only=True)
class RayConfig:
    """Settings of ``train.pipeline = "ray"`` (section ``[ray]``)."""

    num_runners: int = attrs.field(default=2, validator=_positive)  # env runners, one Ray actor each
    envs_per_runner: int = attrs.field(default=0, validator=_non_negative)  # 0: train.num_envs / num_runners
    num_cpus_per_runner: float = attrs.field(default=1.0, validator=_positive)  # also TF's threads in the actor
    # "": start a local Ray with this machine's cores; "auto" or "host:port": join a running cluster
    address: str = ""
    # sample requests a runner holds at once: 2 lets it collect the next unroll while the learner trains
    max_in_flight_per_runner: int = attrs.field(default=2, validator=_positive)
    max_runner_restarts: int = attrs.field(default=3, validator=_non_negative)  # per runner; past it the run stops
    max_policy_lag: int = attrs.field(default=1, validator=_non_negative)  # on-policy: older unrolls are dropped
    start_timeout: float = attrs.field(default=300.0, validator=_positive)  # seconds for a runner to build


def runner_layout(train: Any, config: RayConfig, on_policy: bool) -> list[tuple[int, int]]:
    """``(num_envs, first_env_id)`` of each runner after checking the settings can run.

    The runners' copies are numbered ``0..train.num_envs - 1`` in runner order,
    so the replay buffer keeps one ring per copy as it does for local envs.
    """
    per_runner = config.envs_per_runner or train.num_envs // config.num_runners
    if per_runner * config.num_runners != train.num_envs or per_runner < 1:
        raise ConfigError(f"train.num_envs = {train.num_envs} must equal ray.num_runners = {config.num_runners} x "
                          f"ray.envs_per_runner = {config.envs_per_runner or 'train.num_envs / num_runners'}; "
                          "change train.num_envs or ray.envs_per_runner")
    if on_policy and config.max_policy_lag < config.max_in_flight_per_runner - 1:
        raise ConfigError(f"ray.max_policy_lag = {config.max_policy_lag} is below ray.max_in_flight_per_runner - 1 "
                          f"= {config.max_in_flight_per_runner - 1}, the lag queued requests reach, so most unrolls "
                          "would be dropped; raise it or lower ray.max_in_flight_per_runner")
    return [(per_runner, r * per_runner) for r in range(config.num_runners)]
