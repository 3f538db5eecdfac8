"""The traced TensorFlow step of :class:`rlengine.Policy`, its conversion to a LiteRT model (run by
:mod:`rlengine.policy.lite`), and the check that the converted step agrees with the traced one.

Both take flat lists of numpy arrays, ``[*observation leaves, step_type,
*state leaves]`` (batched), and return ``[*action leaves, *state leaves]``,
the state being ``(transformer chain state, algorithm state)`` flattened.

Why two: calling a ``tf.function`` costs the same however small the network
(argument binding, the runtime's dispatch), which caps a Python control loop
far below what the network allows. The LiteRT interpreter answers a
CartPole MLP's step about 50 times as often a second (``benchmarks/predict_speed.py``,
docs/predict.md#speed). Conversion runs once, in the background, and is checked against TensorFlow
on probe inputs before it is used; the traced function is the fallback wherever conversion fails or
disagrees. The sampling step converts with its randomness as an input (:mod:`rlengine.policy.noise`),
checked against the same noise-fed step traced in TensorFlow.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Optional

import numpy as np
import tensorflow as tf

from rlengine.api.data import Nest, StepType, TimeStep, zeros_from_spec
from rlengine.collect.policy_step import clip_to_spec, greedy, reset_where_first
from rlengine.collect.transformers import TransformerChain
from rlengine.policy.noise import NoiseReader, noise_fed

#: Tolerances of the probe check: the interpreter's kernels round differently from TensorFlow's (~1e-7).
PROBE_RTOL, PROBE_ATOL = 1e-4, 1e-5
NOISE_USED = "noise_used"  # the noise-fed step's count of the draws it read


def sampled(chain: TransformerChain, algorithm: Any, raw: TimeStep, transformer_state: tuple,
            policy_state: Nest, batch: Any) -> tuple:
    """The sampling step: like :func:`~rlengine.collect.policy_step.greedy` with ``rollout`` for ``predict``."""
    time_step, transformer_state = chain.transform(raw, transformer_state)  # never updates statistics
    state = reset_where_first(time_step.step_type, policy_state, algorithm.initial_state(batch))
    step = algorithm.rollout(time_step, state)
    return clip_to_spec(step.action, algorithm.action_spec), transformer_state, step.state


def batched_signature(specs: list, first_index: int = 0) -> list:
    """``TensorSpec`` s with a ``None`` batch dimension, named ``in000``, ``in001``, ... (TensorFlow Lite's names)."""
    return [tf.TensorSpec([None, *s.shape], s.dtype, name=f"in{first_index + i:03d}") for i, s in enumerate(specs)]


def trace_step(chain: TransformerChain, algorithm: Any, raw_spec: TimeStep, sample: bool,
               noise_input: bool = False) -> Any:
    """The concrete function of one step on flat inputs; it returns ``{"out000": ..., ...}`` (flat outputs).

    ``noise_input`` (sampling only): the step's random draws read a last input
    of uniform draws (:mod:`rlengine.policy.noise`), and it also returns how
    many it read (``noise_used``).
    """
    observation_spec = raw_spec.observation
    state_structure = (chain.state_spec, algorithm.state_spec)
    num_observations = len(tf.nest.flatten(observation_spec))
    num_state = len(tf.nest.flatten(state_structure))
    step = sampled if sample else greedy

    def flat_step(*inputs):
        observation = tf.nest.pack_sequence_as(observation_spec, list(inputs[:num_observations]))
        step_type = inputs[num_observations]
        state = list(inputs[num_observations + 1:num_observations + 1 + num_state])
        chain_state, policy_state = tf.nest.pack_sequence_as(state_structure, state)
        batch = tf.shape(step_type)[0]
        zeros = tf.zeros([batch], tf.float32)
        # Observations only, as in an exported policy: no reward, and no previous action.
        raw = TimeStep(step_type, zeros, zeros + 1.0, observation, zeros_from_spec(raw_spec.prev_action, [batch]),
                       tf.zeros([batch], tf.int32))
        reader = NoiseReader(inputs[-1]) if noise_input else None
        with noise_fed(reader) if reader else contextlib.nullcontext():
            action, chain_state, policy_state = step(chain, algorithm, raw, chain_state, policy_state, batch)
        outputs = tf.nest.flatten(action) + tf.nest.flatten((chain_state, policy_state))
        named = {f"out{i:03d}": out for i, out in enumerate(outputs)}
        return {**named, NOISE_USED: reader.used} if reader else named

    signature = batched_signature(tf.nest.flatten(observation_spec))
    signature += [tf.TensorSpec([None], tf.int32, name=f"in{len(signature):03d}")]
    signature += batched_signature(tf.nest.flatten(state_structure), len(signature))
    if noise_input:
        signature += [tf.TensorSpec([None], tf.float32, name=f"in{len(signature):03d}")]
    return tf.function(flat_step, autograph=False).get_concrete_function(*signature)


def noise_counts(function: Any, inputs_of: Callable[[int], list]) -> Optional[tuple]:
    """``(per_row, fixed)``: the noise-fed step ``function`` reads ``per_row * batch + fixed`` draws, found
    at batches 1 and 2 and checked at 3; None when the count is not of that form."""
    plenty = np.zeros([1 << 16], np.float32) + 0.5

    def used(batch: int) -> int:
        return int(function(*[tf.constant(x) for x in [*inputs_of(batch), plenty]])[NOISE_USED])

    one, two = used(1), used(2)
    per_row, fixed = two - one, 2 * one - two
    if per_row < 0 or fixed < 0 or used(3) != 3 * per_row + fixed:
        return None
    return per_row, fixed


class TensorFlowStep:
    """Runs the traced step; ``tf.constant`` first, which binds faster than numpy arguments."""

    backend = "tensorflow"
    interpreter = None
    noise = None  # it draws from the run's generator, not from an input

    def __init__(self, function: Any):
        self.function = function
        self.keys = sorted(key for key in function.structured_outputs if key != NOISE_USED)

    def __call__(self, inputs: list) -> list:
        out = self.function(*[tf.constant(x) for x in inputs])
        return [out[key].numpy() for key in self.keys]


def convert_to_lite(function: Any, modules: list) -> bytes:
    """The TensorFlow Lite model of a traced step (its variables frozen into constants)."""
    holder = tf.Module()  # the converter saves the function with the objects that own its variables
    holder.parts = list(modules)
    return tf.lite.TFLiteConverter.from_concrete_functions([function], holder).convert()


def probe_inputs(observation_specs: list, initial_state: tuple, batch: int = 3) -> list:
    """Inputs to compare the two steps on: ``batch`` random observations (within bounds), an episode start
    and continuations, the initial state (for ``batch`` rows)."""
    rng = np.random.default_rng(0)

    def observation(spec):
        dtype = spec.dtype.as_numpy_dtype
        shape = [batch, *spec.shape]
        if spec.dtype.is_floating:
            value = rng.normal(size=shape)
            if hasattr(spec, "minimum"):
                value = np.clip(value, spec.minimum, spec.maximum)
            return value.astype(dtype)
        if hasattr(spec, "minimum"):
            return np.broadcast_to(np.asarray(spec.minimum, dtype), shape).copy()
        return np.zeros(shape, dtype)

    step_type = np.full([batch], StepType.MID, np.int32)
    step_type[0] = StepType.FIRST
    return [*map(observation, observation_specs), step_type, *initial_state]


def disagreement(reference: Callable, candidate: Callable, inputs: list, step_type_index: int,
                 num_actions: int) -> str:
    """Why ``candidate`` disagrees with ``reference`` on two chained steps from ``inputs``, or "" if it agrees."""
    for _ in range(2):
        expected, got = reference(inputs), candidate(inputs)
        for i, (e, g) in enumerate(zip(expected, got)):
            if e.shape != g.shape or e.dtype != g.dtype:
                return f"output {i} is {g.dtype}{list(g.shape)}, expected {e.dtype}{list(e.shape)}"
            if np.issubdtype(e.dtype, np.floating):
                if not np.allclose(e, g, rtol=PROBE_RTOL, atol=PROBE_ATOL):
                    return f"output {i} differs by up to {np.max(np.abs(e - g)):.3g}"
            elif not np.array_equal(e, g):
                return f"output {i} differs"
        # the second step continues the first: its state, and no episode start (the noise, if any, again)
        step_type = np.full_like(inputs[step_type_index], StepType.MID)
        trailing = inputs[step_type_index + 1 + len(expected) - num_actions:]
        inputs = [*inputs[:step_type_index], step_type, *expected[num_actions:], *trailing]
    return ""
