"""The synchronous driver: unrolls a batched environment with the rollout policy.

One call of :meth:`SyncDriver.run` is one ``tf.function`` call that steps the
environment ``unroll_length`` times (the environment is reached through
``tf.numpy_function``), so the Python-to-graph cost is paid once per unroll,
not once per step.

Rows overlap by one: an unroll returns ``unroll_length + 1`` rows, and its
last row (already acted on, its action is what the next unroll applies
first) is the next unroll's first row. So the reward between two unrolls is
never lost and the last row serves as the bootstrap for returns.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

import numpy as np
import tensorflow as tf

from rlengine import random as run_random
from rlengine.data import Experience, Nest, PolicyStep, StepType, TimeStep
from rlengine.distributions import Converters
from rlengine.errors import SpecMismatchError
from rlengine.interfaces import Algorithm, Environment
from rlengine.specs import RunSpecs
from rlengine.transformers import TransformerChain


class Carry(NamedTuple):
    """What one unroll hands to the next."""

    experience: Experience  # the last row, already acted on
    transformer_state: tuple
    policy_state: Nest  # state after the last row's rollout


def reset_where_first(step_type: Any, state: Nest, initial: Nest) -> Nest:
    """Replace the rows of ``state`` whose step is FIRST by the initial state."""
    first = tf.equal(step_type, StepType.FIRST)

    def select(s, z):
        mask = tf.reshape(first, [-1] + [1] * (len(s.shape) - 1))
        return tf.where(mask, z, s)

    return tf.nest.map_structure(select, state, initial)


def uniform_action(spec: Nest, batch: int) -> Nest:
    """Uniformly random actions within the bounds of ``spec`` (initial collection)."""

    def sample(s):
        if not hasattr(s, "minimum"):
            raise SpecMismatchError(
                f"uniformly random initial actions need bounded action specs, got {s}; give the environment's "
                "action spec bounds (BoundedTensorSpec) or set the algorithm's initial_collect_steps = 0")
        shape = [batch, *s.shape]
        low = tf.broadcast_to(tf.cast(s.minimum, s.dtype), s.shape)
        high = tf.broadcast_to(tf.cast(s.maximum, s.dtype), s.shape)
        if s.dtype.is_integer:
            offset = tf.random.stateless_uniform(shape, run_random.seed(), 0, tf.int32.max, tf.int32)
            offset = offset % tf.cast(high - low + 1, tf.int32)
            return low + tf.cast(offset, s.dtype)
        return tf.random.stateless_uniform(shape, run_random.seed(), dtype=s.dtype) * (high - low) + low

    return tf.nest.map_structure(sample, spec)


def clip_to_spec(action: Nest, spec: Nest) -> Nest:
    """Clip float actions into their bounds (the stored action stays unclipped)."""

    def clip(a, s):
        if a.dtype.is_floating and hasattr(s, "minimum"):
            return tf.clip_by_value(a, s.minimum, s.maximum)
        return a

    return tf.nest.map_structure(clip, action, spec)


def observe(chain: TransformerChain, algorithm: Algorithm, raw: TimeStep, transformer_state: tuple,
            policy_state: Nest, batch: Any) -> tuple[TimeStep, tuple, Nest]:
    """The env-side half of a step: transform the raw step, reset the policy state at FIRST.

    Returns ``(time_step, transformer_state, state)``; transformer statistics
    update here, on collected data only.
    """
    time_step, transformer_state = chain.transform(raw, transformer_state, update=True)
    state = reset_where_first(time_step.step_type, policy_state, algorithm.initial_state(batch))
    return time_step, transformer_state, state


def act(algorithm: Algorithm, converters: Converters, specs: RunSpecs, random_actions: Any,
        time_step: TimeStep, state: Nest, batch: Any) -> tuple:
    """The policy half of a step: ``(action, next_state, info as parameters)``.

    While ``random_actions`` is true (off-policy initial collection) the
    action is uniformly random; the rollout still runs, so the info keeps its spec.
    """
    step: PolicyStep = algorithm.rollout(time_step, state)
    action = step.action
    if algorithm.off_policy and algorithm.initial_collect_steps:  # only they collect at random
        action = tf.cond(random_actions, lambda: uniform_action(specs.action, batch), lambda: action)
    return action, step.state, converters.to_params(step.info)


class EnvCaller:
    """Calls a Python environment from inside a graph."""

    def __init__(self, env: Environment, raw_spec: TimeStep):
        self.env = env
        self.spec = raw_spec
        self.flat_spec = tf.nest.flatten(raw_spec)
        self.batch = env.batch_size
        self.action_spec = env.action_spec()
        #: The environment's own exception, if one escaped step() or reset(): the graph
        #: reports it only as a generic op error, without its type.
        self.error: BaseException | None = None

    def _py_step(self, *flat_action: np.ndarray) -> list:
        action = tf.nest.pack_sequence_as(self.action_spec, list(flat_action))
        return self._call(self.env.step, action)

    def _call(self, method: Any, *args: Any) -> list:
        try:
            return tf.nest.flatten(method(*args))
        except BaseException as exc:
            self.error = exc
            raise

    def step(self, action: Nest) -> TimeStep:
        flat = tf.numpy_function(self._py_step, tf.nest.flatten(action),
                                 [s.dtype for s in self.flat_spec], stateful=True)
        return self._pack(flat)

    def reset(self) -> TimeStep:
        flat = tf.numpy_function(lambda: self._call(self.env.reset), [],
                                 [s.dtype for s in self.flat_spec], stateful=True)
        return self._pack(flat)

    def _pack(self, flat: list) -> TimeStep:
        shaped = [tf.ensure_shape(t, [self.batch, *s.shape]) for t, s in zip(flat, self.flat_spec)]
        return tf.nest.pack_sequence_as(self.spec, shaped)


class SyncDriver:
    """Collects experience from one batched environment, one unroll per call."""

    def __init__(self, env: Environment, chain: TransformerChain, algorithm: Algorithm,
                 specs: RunSpecs, converters: Converters, unroll_length: int):
        self.env = EnvCaller(env, specs.raw_time_step)
        self.chain = chain
        self.algorithm = algorithm
        self.specs = specs
        self.converters = converters
        self.unroll_length = unroll_length
        self.batch = env.batch_size
        #: While True, actions are uniformly random (off-policy initial collection);
        #: the algorithm's rollout still runs, so the stored info keeps its spec.
        self.random_actions = tf.Variable(False, trainable=False, name="random_actions")
        # autograph=False: the loops below are explicit, and converting the
        # algorithm's source on first trace cost more than the training.
        self.run = tf.function(self._run, autograph=False)
        self.start = tf.function(self._start, autograph=False)

    def _act(self, raw: TimeStep, transformer_state: tuple, policy_state: Nest) -> tuple:
        time_step, transformer_state, state = observe(self.chain, self.algorithm, raw, transformer_state,
                                                      policy_state, self.batch)
        action, next_state, info = act(self.algorithm, self.converters, self.specs, self.random_actions,
                                       time_step, state, self.batch)
        exp = Experience(*time_step, action, info, state)
        return exp, transformer_state, next_state

    def _start(self) -> Carry:
        """Reset the environment and act on the first steps."""
        return Carry(*self._act(self.env.reset(), self.chain.initial_state(self.batch),
                                self.algorithm.initial_state(self.batch)))

    def _run(self, carry: Carry) -> tuple[Experience, Carry]:
        """Step ``unroll_length`` times; returns ``[T + 1, B]`` rows and the next carry."""
        flat_spec = tf.nest.flatten(self.specs.experience)
        arrays = [tf.TensorArray(s.dtype, size=self.unroll_length + 1, element_shape=[self.batch, *s.shape])
                  for s in flat_spec]
        arrays = [a.write(0, t) for a, t in zip(arrays, tf.nest.flatten(carry.experience))]

        def step(t, carry, arrays):
            raw = self.env.step(clip_to_spec(carry.experience.action, self.specs.action))
            carry = Carry(*self._act(raw, carry.transformer_state, carry.policy_state))
            arrays = [a.write(t, x) for a, x in zip(arrays, tf.nest.flatten(carry.experience))]
            return t + 1, carry, arrays

        _, carry, arrays = tf.while_loop(lambda t, *_: t <= self.unroll_length, step,
                                         (tf.constant(1), carry, arrays), parallel_iterations=1)
        experience = tf.nest.pack_sequence_as(self.specs.experience, [a.stack() for a in arrays])
        return experience, carry


class EpisodeStats:
    """Per-copy running returns, turned into finished-episode statistics (numpy)."""

    def __init__(self, batch: int):
        self.returns = np.zeros(batch, np.float64)
        self.lengths = np.zeros(batch, np.int64)
        self.finished_returns: list[float] = []
        self.finished_lengths: list[int] = []

    def add(self, step_type: np.ndarray, reward: np.ndarray, env_ids: Optional[np.ndarray] = None) -> None:
        """Feed ``[T, B]`` new rows (not the overlapping first row of an unroll).

        ``env_ids`` (``[B]``) says which copies the columns are, for unrolls
        of one env thread among several; by default the columns are copies ``0..B-1``.
        """
        ids = np.arange(step_type.shape[1]) if env_ids is None else np.asarray(env_ids)
        for st, r in zip(step_type, reward):
            first, last = ids[st == StepType.FIRST], ids[st == StepType.LAST]
            self.returns[first] = 0.0
            self.lengths[first] = 0
            going = ids[st != StepType.FIRST]
            self.returns[going] += r[st != StepType.FIRST]
            self.lengths[going] += 1
            if len(last):
                self.finished_returns.extend(self.returns[last].tolist())
                self.finished_lengths.extend(self.lengths[last].tolist())

    def pop(self) -> dict:
        """Statistics of the episodes finished since the last call (may be empty)."""
        if not self.finished_returns:
            return {}
        out = {
            "train/episode_return": float(np.mean(self.finished_returns)),
            "train/episode_length": float(np.mean(self.finished_lengths)),
            "train/episodes": float(len(self.finished_returns)),
        }
        self.finished_returns, self.finished_lengths = [], []
        return out
