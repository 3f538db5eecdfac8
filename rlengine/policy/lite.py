"""The converted step of :class:`rlengine.Policy` on the LiteRT interpreter (``ai_edge_litert``), or on
TensorFlow's ``tf.lite.Interpreter`` where LiteRT is not installed.

No TensorFlow unless LiteRT is missing: a policy loaded from its cached model
(:mod:`rlengine.policy.cache`) runs on LiteRT and NumPy alone.

A step takes a flat list of numpy arrays, ``[*observation leaves, step_type,
*state leaves]`` (batched), and returns ``[*action leaves, *state leaves]``.
The sampling step takes one more input last: ``noise``, float32 uniform draws
in [0, 1), ``noise_per_row * batch + noise_fixed`` of them
(:mod:`rlengine.policy.noise`).
"""

from __future__ import annotations

import threading
import warnings
from typing import Any, NamedTuple

import numpy as np

from rlengine.quiet_tensorflow import import_tensorflow, quiet_stderr

MAX_INTERPRETERS = 8  # one per batch size seen, the oldest dropped beyond this


class Interpreters(NamedTuple):
    """The interpreter class that runs converted steps, and which one it is."""

    make: Any  # (model bytes) -> an interpreter
    name: str  # "litert" or "tf.lite"


_announced = threading.Event()  # LiteRT's XNNPACK delegate says it was created, once a process


def _litert() -> Interpreters:
    from ai_edge_litert.interpreter import Interpreter

    def make(model: bytes) -> Any:
        # with the default XNNPACK delegate: a batch of 64 runs 2-3 times as often a second
        # (benchmarks/predict_speed.py); the line it prints on its first creation is dropped
        if _announced.is_set():
            return Interpreter(model_content=model, num_threads=1)
        with quiet_stderr():
            interpreter = Interpreter(model_content=model, num_threads=1)
            interpreter.allocate_tensors()  # where the delegate is made
        _announced.set()
        return interpreter

    return Interpreters(make, "litert")


def _tensorflow_lite() -> Interpreters:
    import_tensorflow()
    import tensorflow as tf

    resolver = tf.lite.experimental.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES

    def make(model: bytes) -> Any:
        # without the default XNNPACK delegate, which TensorFlow's interpreter announces on stderr every time;
        # tf.lite.Interpreter warns that it moves to LiteRT, which is what runs when installed. A filter
        # (set again each time: test runners reset them) rather than catch_warnings(), which is not
        # thread-safe, and conversion runs in a thread of its own.
        warnings.filterwarnings("ignore", message=r"\s*Warning: tf\.lite\.Interpreter is deprecated",
                                category=UserWarning)
        return tf.lite.Interpreter(model_content=model, num_threads=1, experimental_op_resolver_type=resolver)

    return Interpreters(make, "tf.lite")


def interpreters() -> Interpreters:
    """LiteRT's interpreter, or TensorFlow's where ``ai_edge_litert`` cannot be imported."""
    try:
        return _litert()
    except ImportError:
        return _tensorflow_lite()


def tensor_indices(make: Any, model: bytes, num_inputs: int, num_outputs: int) -> tuple[list, list]:
    """The interpreter's tensor index of each input ``in000``... (None where the converter pruned an unused
    one, e.g. the step type of a stateless policy) and of each output ``out000``..., from the signature."""
    runner = make(model).get_signature_runner()  # a throwaway: a runner pins the interpreter's tensors
    inputs, outputs = runner.get_input_details(), runner.get_output_details()
    return ([inputs[f"in{i:03d}"]["index"] if f"in{i:03d}" in inputs else None for i in range(num_inputs)],
            [outputs[f"out{i:03d}"]["index"] for i in range(num_outputs)])


class LiteStep:
    """Runs a converted step; one interpreter per batch size (resizing one is slow), calls serialised.

    ``input_shapes`` are the inputs' shapes without the batch dimension;
    ``noise`` is ``(per_row, fixed)`` for a sampling step, whose last input
    is its 1-D noise, else None.
    """

    backend = "tflite"

    def __init__(self, model: bytes, input_shapes: list, num_outputs: int, step_type_index: int,
                 noise: tuple | None = None, kind: Interpreters | None = None):
        self.model, self.input_shapes, self.step_type_index, self.noise = model, input_shapes, step_type_index, noise
        self._make, self.interpreter = kind or interpreters()
        num_inputs = len(input_shapes) + (noise is not None)
        self.inputs, self.outputs = tensor_indices(self._make, model, num_inputs, num_outputs)
        self._interpreters: dict = {}
        self._lock = threading.Lock()  # an interpreter is not safe to call from two threads at once

    def noise_size(self, batch: int) -> int:
        """How many uniform draws a sampling step takes for ``batch`` rows."""
        assert self.noise is not None, "a greedy step draws no noise"
        per_row, fixed = self.noise
        return per_row * batch + fixed

    def _sized(self, batch: int) -> Any:
        interpreter = self._interpreters.get(batch)
        if interpreter is None:
            if len(self._interpreters) >= MAX_INTERPRETERS:
                self._interpreters.pop(next(iter(self._interpreters)))
            interpreter = self._make(self.model)
            shapes = [[batch, *shape] for shape in self.input_shapes]
            if self.noise is not None:
                shapes.append([self.noise_size(batch)])
            for index, shape in zip(self.inputs, shapes):
                if index is not None:
                    interpreter.resize_tensor_input(index, shape, strict=False)
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


def uniform_noise(generator: np.random.Generator, size: int) -> np.ndarray:
    """``size`` float32 draws in [0, 1) for a sampling step."""
    return generator.random(size, dtype=np.float32)
