"""A Python environment called from inside a graph (``tf.numpy_function``).

What the environment returns is checked against its spec before TensorFlow
sees it (by the fault guard, or here for an unguarded environment): a wrong
shape or dtype is then one error naming the environment and the field
rather than a TensorFlow error that names neither. The checked arrays then
cross into the graph packed into one buffer (:mod:`rlengine.collect.byte_packing`).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np
import tensorflow as tf

from rlengine.api import Environment
from rlengine.api.data import Nest, TimeStep
from rlengine.collect.byte_packing import BytePacking
from rlengine.collect.env_checks import TimeStepCheck
from rlengine.collect.python_thread import keep_thread_state


class EnvCaller:
    """Calls a Python environment from inside a graph."""

    def __init__(self, env: Environment, raw_spec: TimeStep, before_call: Optional[Callable[[], None]] = None):
        self.env = env
        self.before_call = before_call  # runs before each reset and step (the evaluator's stop check)
        self.spec = raw_spec
        self.flat_spec = tf.nest.flatten(raw_spec)
        self.batch = env.batch_size
        self.packing = BytePacking(self.flat_spec, self.batch)
        self.action_spec = env.action_spec()
        self._nested_action = tf.nest.is_nested(self.action_spec)  # else the one array is the action
        #: The environment's own exception, if one escaped step() or reset(): the graph
        #: reports it only as a generic op error, without its type.
        self.error: BaseException | None = None
        # A GuardedEnvironment checks them itself, against its own spec: the arrays are packed by raw_spec
        # (byte packing reinterprets bytes, so a dtype of the same size would pass unnoticed), which must be it
        checked = getattr(env, "checks_outputs", False) and env.time_step_spec() == raw_spec
        self._check = None if checked else TimeStepCheck(raw_spec, self.batch, f"environment {env.env_id!r}")
        # the guard hands over the flat leaves its check made; another environment's time step is checked here
        self._reset, self._step = (env.reset_leaves, env.step_leaves) if checked else (env.reset, env.step)

    def _py_step(self, *flat_action: np.ndarray) -> list:
        action = tf.nest.pack_sequence_as(self.action_spec, list(flat_action)) if self._nested_action else flat_action[0]
        return self._call("step", self._step, action)

    def _call(self, what: str, method: Any, *args: Any) -> list:
        keep_thread_state()  # a TensorFlow thread: keep its Python state for the next step
        try:
            if self.before_call is not None:
                self.before_call()
            answer = method(*args)  # the checked leaves, or a time step to check
            return answer if self._check is None else self._check.check_spec(answer, what)
        except BaseException as exc:
            self.error = exc
            raise

    def step(self, action: Nest) -> TimeStep:
        return tf.nest.pack_sequence_as(self.spec, self.packing.numpy_function(self._py_step, tf.nest.flatten(action)))

    def reset(self) -> TimeStep:
        leaves = self.packing.numpy_function(lambda: self._call("reset", self._reset), [])
        return tf.nest.pack_sequence_as(self.spec, leaves)
