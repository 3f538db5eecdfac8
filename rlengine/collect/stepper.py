"""The one env-step seam: how a graph steps its environment, whichever kind it is.

Collection, evaluation and the remote collector reach their environment only through a stepper,
inside their ``tf.function``::

    stepper = stepper_for(env, raw_spec)
    env_state, time_step = stepper.reset()
    while ...:
        env_state, time_step = stepper.step(env_state, action)

A Python :class:`~rlengine.api.environment.Environment` is called through ``tf.numpy_function``
(:class:`~rlengine.collect.env_caller.EnvCaller`) and keeps its state in Python: its ``env_state`` is
``()``. A :class:`~rlengine.api.graph_environment.GraphEnvironment` is stepped by its own
TensorFlow functions, so its state travels with the graph's loop, in the carry, and a
checkpoint of the carry holds it.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Union

import tensorflow as tf

from rlengine.api import Environment
from rlengine.api.data import Nest, TimeStep
from rlengine.api.graph_environment import GraphEnvironment
from rlengine.collect.env_caller import EnvCaller


class PythonStepper:
    """A Python environment, called from the graph; its state stays in Python."""

    calls_python = True

    def __init__(self, env: Environment, raw_spec: TimeStep, before_call: Optional[Callable[[], None]] = None):
        self.caller = EnvCaller(env, raw_spec, before_call)
        self.env = env
        self.spec = raw_spec

    @property
    def error(self) -> Optional[BaseException]:
        """The environment's own exception, if one escaped its last call (the graph names only an op)."""
        return self.caller.error

    @error.setter
    def error(self, value: Optional[BaseException]) -> None:
        self.caller.error = value

    def state_spec(self) -> Nest:
        return ()

    def reset(self) -> tuple[Nest, TimeStep]:
        return (), self.caller.reset()

    def step(self, env_state: Nest, action: Nest) -> tuple[Nest, TimeStep]:
        return (), self.caller.step(action)


class GraphStepper:
    """A graph environment: its functions become part of the calling graph, its state part of the carry.

    Each reset draws new episodes: its seed is the environment's seed and the number of resets so
    far, so an evaluation does not replay the previous one's episodes.
    """

    calls_python = False
    error: Optional[BaseException] = None  # nothing escapes from Python: errors are the graph's own

    def __init__(self, env: GraphEnvironment, raw_spec: TimeStep):
        self.env = env
        self.spec = raw_spec
        self.resets = tf.Variable(0, dtype=tf.int32, trainable=False, name="env_resets")

    def state_spec(self) -> Nest:
        return self.env.state_spec()

    def reset(self) -> tuple[Nest, TimeStep]:
        return self.env.reset(reset_seed(self.env, self.resets.assign_add(1) - 1))

    def step(self, env_state: Nest, action: Nest) -> tuple[Nest, TimeStep]:
        return self.env.step(env_state, action)


def reset_seed(env: GraphEnvironment, resets: Any) -> Any:
    """The int32 ``[2]`` seed of ``env``'s reset number ``resets``: the run's seed, then the count."""
    return tf.stack([tf.constant(env.seed % 2**31, tf.int32), tf.cast(resets, tf.int32)])


Stepper = Union[PythonStepper, GraphStepper]


def stepper_for(env: Any, raw_spec: TimeStep, before_call: Optional[Callable[[], None]] = None) -> Stepper:
    """The stepper of ``env``; ``before_call`` runs before each call of a Python environment (a stop check)."""
    if isinstance(env, GraphEnvironment):
        return GraphStepper(env, raw_spec)
    return PythonStepper(env, raw_spec, before_call)


def is_graph_environment(env: Any) -> bool:
    """Whether ``env`` is stepped inside the graph (no Python call per step)."""
    return isinstance(env, GraphEnvironment)
