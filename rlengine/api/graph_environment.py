"""The GraphEnvironment interface: a batch of environment copies written as TensorFlow functions.

Where an :class:`~rlengine.api.environment.Environment` steps Python code on numpy arrays, a graph
environment is pure TensorFlow over batched tensors, so the engine can step it inside the same
compiled graph as the policy, with no call into Python::

    env = EnvCls(env_id="tf/CartPole-v1", num_envs=1024, seed=0)
    state, time_step = env.reset(seed)              # seed: int32 [2], a stateless random seed
    for _ in range(unroll_length):                  # a tf.while_loop inside one tf.function
        action = policy(time_step)
        state, time_step = env.step(state, action)

``reset`` and ``step`` are functions of their inputs alone: the whole environment, its random key
included, lives in ``state``, a nest of tensors with the batch first. The same seed gives the same
episodes, and a checkpoint holds ``state`` as tensors to continue them exactly. The engine makes
the ``reset`` seed from the run's seed (``self.seed``), so runs with one seed are reproducible.

The time steps follow the same rules as an ``Environment``'s: each copy starts a new episode by
itself after a ``LAST`` step (the next ``step`` ignores its action for that copy and returns a
``FIRST`` step with reward 0 and discount 1); a termination has discount 0, a truncation (the
time limit) discount 1; ``env_id`` numbers the copies from ``first_env_id``.

Register a graph environment under the id users train on (``rlengine train --env tf/CartPole-v1``)
with ``rlengine_register_graph_environments``; :func:`rlengine.testing.check_graph_environment`
runs one against this contract.

A graph environment that reproduces a Python one names it in ``twin_of`` (``"CartPole-v1"`` for
``tf/CartPole-v1``): a run given no config then starts from the twin's preset
(:mod:`rlengine.config.presets`) when no preset names the graph environment's own id.
"""

from __future__ import annotations

from typing import Any, ClassVar, Optional

from rlengine.api.data import Nest, TimeStep
from rlengine.api.environment import EnvironmentCopies


class GraphEnvironment(EnvironmentCopies):
    """Base class of every graph environment plugin (batched tensors in and out, no Python state).

    Built as ``cls(env_id, num_envs, seed, first_env_id, config)``; ``time_step_spec()`` and
    ``action_spec()`` are one copy's, as an :class:`~rlengine.api.environment.Environment`'s.
    """

    #: The id of the Python environment this one reproduces (a Gymnasium id, ``"CartPole-v1"``), or None.
    #: A preset registered for that id serves this one too, unless a preset names this one's own id.
    twin_of: ClassVar[Optional[str]] = None

    def state_spec(self) -> Nest:
        """Nest of ``tf.TensorSpec`` of one copy's state (no batch dimension).

        ``reset`` and ``step`` return the state of every copy, ``[B, ...]`` per leaf. The engine
        carries it through its loops and checkpoints it, so every leaf keeps its shape and dtype
        from step to step.
        """
        raise NotImplementedError

    def reset(self, seed: Any) -> tuple[Nest, TimeStep]:
        """``(state, time_step)``: every copy at the ``FIRST`` step of a new episode.

        ``seed`` is an int32 ``[2]`` tensor; the copies draw different episodes from it.
        """
        raise NotImplementedError

    def step(self, state: Nest, action: Nest) -> tuple[Nest, TimeStep]:
        """``(state, time_step)`` after one action per copy (``action``: a nest of ``[B, ...]``)."""
        raise NotImplementedError

    def render(self, state: Nest) -> Any:
        """An RGB frame (H, W, 3) uint8 of the first copy, where supported."""
        raise NotImplementedError(f"{type(self).__name__} cannot render")

    def close(self) -> None:
        """Nothing to release by default: a graph environment holds no process or file."""
