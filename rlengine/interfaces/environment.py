"""The Environment interface: a batch of environment copies stepped together.

The core drives an environment like this::

    env = EnvCls(env_id="CartPole-v1", num_envs=8, seed=0, first_env_id=0, config=cfg)
    time_step = env.reset()                    # TimeStep of numpy arrays, [B, ...]
    while training:
        time_step = env.step(actions)          # actions: nest of numpy arrays [B, ...]
    env.close()

Each copy starts a new episode by itself after a ``LAST`` step: the next
``step`` ignores its action for that copy and returns a ``FIRST`` step with
reward 0 and discount 1. ``env_id`` numbers the copies from ``first_env_id``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rlengine.data import Nest, TimeStep
from rlengine.interfaces.algorithm import NoConfig


class Environment:
    """Base class of every environment plugin (batched, numpy in and out)."""

    config_class: ClassVar[type] = NoConfig

    def __init__(self, env_id: str, num_envs: int, seed: int, first_env_id: int = 0, config: Any = None):
        self.env_id = env_id
        self.num_envs = num_envs
        self.seed = seed
        self.first_env_id = first_env_id
        self.config = config

    @property
    def batch_size(self) -> int:
        return self.num_envs

    def time_step_spec(self) -> TimeStep:
        """TimeStep of ``tf.TensorSpec`` nests for one copy (no batch dimension)."""
        raise NotImplementedError

    def action_spec(self) -> Nest:
        """Nest of ``tf.TensorSpec`` (``BoundedTensorSpec`` for bounded actions)."""
        raise NotImplementedError

    def reset(self) -> TimeStep:
        """Start every copy afresh; returns FIRST steps."""
        raise NotImplementedError

    def step(self, action: Nest) -> TimeStep:
        """Apply one action per copy; returns the next time steps."""
        raise NotImplementedError

    def render(self) -> Any:
        """An RGB frame (H, W, 3) of the first copy, where supported."""
        raise NotImplementedError(f"{type(self).__name__} cannot render")

    def close(self) -> None:
        """Release processes and resources. Safe to call twice."""
