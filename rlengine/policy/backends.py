"""The two ways :class:`rlengine.Policy` runs one step: a traced TensorFlow function, or the same function
converted to TensorFlow Lite.

Both take flat lists of numpy arrays, ``[*observation leaves, step_type,
*state leaves]`` (batched), and return ``[*action leaves, *state leaves]``,
the state being ``(transformer chain state, algorithm state)`` flattened.

Why two: calling a ``tf.function`` costs the same however small the network
(argument binding, the runtime's dispatch), which caps a Python control loop
far below what the network allows. The TensorFlow Lite interpreter answers a
CartPole MLP's step about 50 times as often a second (``benchmarks/predict_speed.py``,
docs/predict.md#speed). Conversion runs once, in the background, and is checked against TensorFlow on probe inputs before it is used; the
traced function always exists, for sampling (``deterministic=False``) and as
the fallback wherever conversion fails or disagrees.
"""

from __future__ import annotations

import threading
import warnings
from typing import Any, Callable

import numpy as np
import tensorflow as tf

from rlengine.api.data import Nest, StepType, TimeStep, zeros_from_spec
from rlengine.collect.policy_step import clip_to_spec, greedy, reset_where_first
from rlengine.collect.transformers import TransformerChain

#: Tolerances of the probe check: the interpreter's kernels round differently from TensorFlow's (~1e-7).
PROBE_RTOL, PROBE_ATOL = 1e-4, 1e-5
MAX_INTERPRETERS = 8  # one per batch size seen, the oldest dropped beyond this


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


def trace_step(chain: TransformerChain, algorithm: Any, raw_spec: TimeStep, sample: bool) -> Any:
    """The concrete function of one step on flat inputs; it returns ``{"out000": ..., ...}`` (flat outputs)."""
    observation_spec = raw_spec.observation
    state_structure = (chain.state_spec, algorithm.state_spec)
    num_observations = len(tf.nest.flatten(observation_spec))
    step = sampled if sample else greedy

    def flat_step(*inputs):
        observation = tf.nest.pack_sequence_as(observation_spec, list(inputs[:num_observations]))
        step_type = inputs[num_observations]
        chain_state, policy_state = tf.nest.pack_sequence_as(state_structure, list(inputs[num_observations + 1:]))
        batch = tf.shape(step_type)[0]
        zeros = tf.zeros([batch], tf.float32)
        # Observations only, as in an exported policy: no reward, and no previous action.
        raw = TimeStep(step_type, zeros, zeros + 1.0, observation, zeros_from_spec(raw_spec.prev_action, [batch]),
                       tf.zeros([batch], tf.int32))
        action, chain_state, policy_state = step(chain, algorithm, raw, chain_state, policy_state, batch)
        outputs = tf.nest.flatten(action) + tf.nest.flatten((chain_state, policy_state))
        return {f"out{i:03d}": out for i, out in enumerate(outputs)}

    signature = batched_signature(tf.nest.flatten(observation_spec))
    signature += [tf.TensorSpec([None], tf.int32, name=f"in{len(signature):03d}")]
    signature += batched_signature(tf.nest.flatten(state_structure), len(signature))
    return tf.function(flat_step, autograph=False).get_concrete_function(*signature)


class TensorFlowStep:
    """Runs the traced step; ``tf.constant`` first, which binds faster than numpy arguments."""

    backend = "tensorflow"

    def __init__(self, function: Any):
        self.function = function
        self.keys = sorted(function.structured_outputs)

    def __call__(self, inputs: list) -> list:
        out = self.function(*[tf.constant(x) for x in inputs])
        return [out[key].numpy() for key in self.keys]


def convert_to_lite(function: Any, modules: list) -> bytes:
    """The TensorFlow Lite model of a traced step (its variables frozen into constants)."""
    holder = tf.Module()  # the converter saves the function with the objects that own its variables
    holder.parts = list(modules)
    return tf.lite.TFLiteConverter.from_concrete_functions([function], holder).convert()


def _interpreter(model: bytes) -> Any:
    # without the default XNNPACK delegate: it prints a line to stderr for every interpreter, and for
    # policy-sized networks the built-in kernels are as fast
    resolver = tf.lite.experimental.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    # tf.lite.Interpreter warns that it moves to the ai-edge-litert package; it works, and the notice would
    # reach users who never asked for it. A filter (set again each time: test runners reset them) rather than
    # catch_warnings(), which is not thread-safe, and conversion runs in a thread of its own.
    warnings.filterwarnings("ignore", message=r"\s*Warning: tf\.lite\.Interpreter is deprecated", category=UserWarning)
    return tf.lite.Interpreter(model_content=model, num_threads=1, experimental_op_resolver_type=resolver)


def tensor_indices(model: bytes, num_inputs: int, num_outputs: int) -> tuple[list, list]:
    """The interpreter's tensor index of each input ``in000``... (None where the converter pruned an unused
    one, e.g. the step type of a stateless policy) and of each output ``out000``..., from the signature."""
    runner = _interpreter(model).get_signature_runner()
    inputs, outputs = runner.get_input_details(), runner.get_output_details()
    return ([inputs[f"in{i:03d}"]["index"] if f"in{i:03d}" in inputs else None for i in range(num_inputs)],
            [outputs[f"out{i:03d}"]["index"] for i in range(num_outputs)])


class LiteStep:
    """Runs the converted step; one interpreter per batch size (resizing one is slow), calls serialised."""

    backend = "tflite"

    def __init__(self, model: bytes, input_shapes: list, num_outputs: int, step_type_index: int):
        self.model, self.input_shapes, self.step_type_index = model, input_shapes, step_type_index
        self.inputs, self.outputs = tensor_indices(model, len(input_shapes), num_outputs)
        self._interpreters: dict = {}
        self._lock = threading.Lock()  # an interpreter is not safe to call from two threads at once

    def _sized(self, batch: int) -> Any:
        interpreter = self._interpreters.get(batch)
        if interpreter is None:
            if len(self._interpreters) >= MAX_INTERPRETERS:
                self._interpreters.pop(next(iter(self._interpreters)))
            interpreter = _interpreter(self.model)
            for index, shape in zip(self.inputs, self.input_shapes):
                if index is not None:
                    interpreter.resize_tensor_input(index, [batch, *shape], strict=False)
            interpreter.allocate_tensors()
            self._interpreters[batch] = interpreter
        return interpreter

    def __call__(self, inputs: list) -> list:
        with self._lock:
            interpreter = self._sized(inputs[self.step_type_index].shape[0])
            for index, x in zip(self.inputs, inputs):
                if index is not None:
                    interpreter.set_tensor(index, x)
            interpreter.invoke()
            return [interpreter.get_tensor(index) for index in self.outputs]


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
        # the second step continues the first: its state, and no episode start
        step_type = np.full_like(inputs[step_type_index], StepType.MID)
        inputs = [*inputs[:step_type_index], step_type, *expected[num_actions:]]
    return ""
