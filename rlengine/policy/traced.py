"""The steps of a policy restored in TensorFlow: the greedy step traced, converted to a LiteRT model in
the background (or at once) and checked, and the sampling step, converted with its randomness as an
input or traced on the run's kind of generator.

:class:`TracedSteps` is what :class:`rlengine.Policy` calls when the run was built
(:mod:`rlengine.policy.load`); once converted, ``on_converted`` hands it to the cache
(:mod:`rlengine.policy.cache`), so the next load needs no TensorFlow.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, Iterator, Optional, Union

import numpy as np
import tensorflow as tf

from rlengine.api import seeding
from rlengine.api.data import TimeStep
from rlengine.errors import LiteUnavailable, telling_line
from rlengine.policy.backends import (
    TensorFlowStep,
    convert_to_lite,
    disagreement,
    noise_counts,
    probe_inputs,
    trace_step,
)
from rlengine.policy.lite import LiteStep, uniform_noise

PROBE_ROWS = 3


@contextlib.contextmanager
def drawing_from(generator: tf.random.Generator) -> Iterator[None]:
    """Trace with ``generator`` as the run's random generator (``rlengine.random``), then put the previous
    one back: a loaded policy samples from its own, and never advances a training run's (in this thread only,
    so a run training in another thread meanwhile keeps its own)."""
    with seeding._standing_in(generator):
        yield


class TracedSteps:
    """The greedy and sampling steps of a restored chain and algorithm (see the module's docstring)."""

    def __init__(self, chain: Any, algorithm: Any, raw_spec: TimeStep, checkpoint: str, seed: int,
                 on_converted: Optional[Callable[["TracedSteps"], None]] = None):
        self.checkpoint = checkpoint
        self.algorithm, self.transformers = algorithm, list(chain.transformers)
        self.observation_spec, self.action_spec = raw_spec.observation, algorithm.action_spec
        self._chain, self._algorithm, self._raw_spec = chain, algorithm, raw_spec
        self.observation_specs = tf.nest.flatten(raw_spec.observation)
        self.state_specs = tf.nest.flatten((chain.state_spec, algorithm.state_spec))
        self.stateful = bool(self.state_specs)
        self._num_actions = len(tf.nest.flatten(algorithm.action_spec))
        self._initial_states: dict = {}
        self._generator = tf.random.Generator.from_seed(seed)
        with drawing_from(self._generator):
            self._greedy_tf = TensorFlowStep(trace_step(chain, algorithm, raw_spec, sample=False))
        # replaced by the converted steps once they are checked
        self.greedy: Union[TensorFlowStep, LiteStep] = self._greedy_tf
        self.sampling_lite: Optional[LiteStep] = None
        self._sampling_tf: Optional[TensorFlowStep] = None  # traced on first use
        self._converting: Optional[threading.Thread] = None
        self._on_converted = on_converted
        self.conversion_error: Optional[str] = None

    def initial_state(self, rows: int) -> tuple:
        """The chain's and algorithm's initial state for ``rows`` episodes (not zeros for every plugin)."""
        state = self._initial_states.get(rows)
        if state is None:
            nest = (self._chain.initial_state(rows), self._algorithm.initial_state(rows))
            state = self._initial_states[rows] = tuple(np.asarray(x) for x in tf.nest.flatten(nest))
        return state

    def sampling(self) -> Union[TensorFlowStep, LiteStep]:
        """The sampling step: the converted one, or TensorFlow's. A conversion under way is waited for,
        so which one samples never depends on timing."""
        self.wait()
        if self.sampling_lite is not None:
            return self.sampling_lite
        if self._sampling_tf is None:
            with drawing_from(self._generator):
                self._sampling_tf = TensorFlowStep(trace_step(self._chain, self._algorithm, self._raw_spec,
                                                              sample=True))
        return self._sampling_tf

    # -- conversion -----------------------------------------------------------------------
    def _input_shapes(self) -> list:
        return [s.shape.as_list() for s in [*self.observation_specs, tf.TensorSpec([], tf.int32), *self.state_specs]]

    def _probe(self, rows: int = PROBE_ROWS) -> list:
        return probe_inputs(self.observation_specs, self.initial_state(rows), batch=rows)

    def _converted(self, function: Any, noise: Optional[tuple] = None) -> tuple[LiteStep, str]:
        """The converted step of ``function`` and why it disagrees with TensorFlow's ("" when it agrees)."""
        model = convert_to_lite(function, [self._chain, self._algorithm])
        reference = TensorFlowStep(function)
        lite = LiteStep(model, self._input_shapes(), len(reference.keys), len(self.observation_specs), noise)
        probe = self._probe()
        if noise is not None:
            probe.append(uniform_noise(np.random.default_rng(0), lite.noise_size(PROBE_ROWS)))
        return lite, disagreement(reference, lite, probe, len(self.observation_specs), self._num_actions)

    def convert(self) -> None:
        """Convert and check the greedy step (:class:`LiteUnavailable` when it cannot), then the sampling
        step (which stays on TensorFlow when it cannot), then cache them."""
        try:
            lite, why = self._converted(self._greedy_tf.function)
        except Exception as exc:  # the converter raises many kinds; any means: stay on TensorFlow
            why = f"{type(exc).__name__}: {telling_line(str(exc))}"
        if why:
            self.conversion_error = why
            raise LiteUnavailable(f"the greedy step of {self.checkpoint} cannot run on TensorFlow Lite ({why}); "
                                  "load it with backend='tensorflow'")
        self.greedy = lite
        self.sampling_lite = self._converted_sampling()
        if self._on_converted is not None:
            self._on_converted(self)

    def _converted_sampling(self) -> Optional[LiteStep]:
        try:
            function = trace_step(self._chain, self._algorithm, self._raw_spec, sample=True, noise_input=True)
            counts = noise_counts(function, self._probe)
            if counts is None:
                return None
            lite, why = self._converted(function, counts)
        except Exception:  # a draw with no noise-fed form, or an op LiteRT lacks: sample on TensorFlow
            return None
        return None if why else lite

    def convert_in_background(self) -> None:
        def quietly() -> None:
            with contextlib.suppress(LiteUnavailable):  # kept in conversion_error
                self.convert()

        # not a daemon: one killed mid-conversion at interpreter exit aborts the process; exit waits for it
        self._converting = threading.Thread(target=quietly, name="rlengine-tflite-conversion", daemon=False)
        self._converting.start()

    def wait(self, timeout: Optional[float] = None) -> None:
        converting = self._converting
        if converting is not None and converting is not threading.current_thread():
            converting.join(timeout)
