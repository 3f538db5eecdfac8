"""``GraphEnvAsGymnasium``: one copy of a first-party graph environment as a ``gymnasium.Env``.

For other libraries (and Gymnasium's own ``check_env``): the spaces are the Gymnasium originals',
``reset(seed=...)`` seeds the copy's random key, and ``step`` calls the graph environment's
``step``, traced once into a ``tf.function``. Importing this module registers the ids
``rlengine_tfenvs/CartPole-v1`` (and the four others) with Gymnasium, so
``gymnasium.make("rlengine_tfenvs.gymnasium_adapter:rlengine_tfenvs/CartPole-v1")`` works too.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import tensorflow as tf

try:
    import gymnasium
    from gymnasium import spaces
except ImportError:  # the plugin itself runs without Gymnasium; only this adapter needs it
    raise ImportError("rlengine_tfenvs.GraphEnvAsGymnasium needs Gymnasium: pip install gymnasium") from None

from rlengine import StepType
from rlengine_tfenvs.base import PhysicsEnvironment
from rlengine_tfenvs.plugin import GRAPH_ENVIRONMENTS

__all__ = ["GraphEnvAsGymnasium", "register_gymnasium_ids"]


def _graph_env(env: Any) -> PhysicsEnvironment:
    """One copy of ``env``: a registered id (``"tf/CartPole-v1"``), a class, or an instance of one copy."""
    if isinstance(env, PhysicsEnvironment):
        if env.num_envs != 1:
            raise ValueError(f"GraphEnvAsGymnasium steps one copy; {env!r} has {env.num_envs}")
        return env
    if isinstance(env, str):
        if env not in GRAPH_ENVIRONMENTS:
            raise ValueError(f"unknown graph environment {env!r}; known: {', '.join(GRAPH_ENVIRONMENTS)}")
        module, _, name = GRAPH_ENVIRONMENTS[env].partition(":")
        return getattr(importlib.import_module(module), name)(env, num_envs=1)
    return env(f"tf/{env.twin_of}", num_envs=1)


class GraphEnvAsGymnasium(gymnasium.Env):
    """A ``gymnasium.Env`` stepping one copy of a graph environment (``env``: id, class or instance).

    After a terminal or truncated step, call ``reset()`` as with any Gymnasium env; ``reset()``
    without a seed continues the copy's random stream, as Gymnasium's envs continue theirs.
    """

    metadata = {"render_modes": []}

    def __init__(self, env: Any = "tf/CartPole-v1"):
        self.graph_env = graph_env = _graph_env(env)
        self.observation_space = spaces.Box(graph_env.observation_low, graph_env.observation_high, dtype=np.float32)
        if graph_env.num_actions is not None:
            self.action_space = spaces.Discrete(graph_env.num_actions)
        else:
            self.action_space = spaces.Box(graph_env.action_low, graph_env.action_high, dtype=np.float32)
        self._action_dtype = graph_env.action_spec().dtype.as_numpy_dtype
        self._reset = tf.function(graph_env.reset)  # traced once each
        self._step = tf.function(graph_env.step)
        self._state = None

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple:
        super().reset(seed=seed)
        if seed is not None or self._state is None:
            # the graph env's int32 [2] seed, from the generator Gymnasium just seeded (or from entropy)
            graph_seed = self.np_random.integers(0, 2**31 - 1, size=2, dtype=np.int64).astype(np.int32)
            self._state, time_step = self._reset(tf.constant(graph_seed))
        else:  # mark the episode over: the graph env's next step begins a new one from the copy's key
            state = dict(self._state, done=tf.ones([1], tf.bool))
            self._state, time_step = self._step(state, np.zeros([1, *self.action_space.shape], self._action_dtype))
        return time_step.observation[0].numpy(), {}

    def step(self, action: Any) -> tuple:
        if self._state is None:
            raise RuntimeError(f"{self.graph_env.env_id}: call reset() before step()")
        batch = np.asarray(action, self._action_dtype).reshape(1, *self.action_space.shape)
        self._state, time_step = self._step(self._state, batch)
        last = int(time_step.step_type[0]) == StepType.LAST
        terminated = last and float(time_step.discount[0]) == 0.0
        return (time_step.observation[0].numpy(), float(time_step.reward[0]), terminated, last and not terminated,
                {})

    def __repr__(self) -> str:
        return f"GraphEnvAsGymnasium({self.graph_env.env_id!r})"


def register_gymnasium_ids() -> None:
    """Register ``rlengine_tfenvs/<Gymnasium id>`` for every first-party graph env (idempotent)."""
    for env_id, reference in GRAPH_ENVIRONMENTS.items():
        name = f"rlengine_tfenvs/{env_id.removeprefix('tf/')}"
        if name in gymnasium.registry:
            continue
        module, _, cls = reference.partition(":")
        # the graph env truncates at Gymnasium's limit itself; the spec states it for libraries that read it
        limit = getattr(importlib.import_module(module), cls).max_episode_steps
        gymnasium.register(id=name, entry_point=f"{__name__}:GraphEnvAsGymnasium", kwargs={"env": env_id},
                           max_episode_steps=limit)


register_gymnasium_ids()
