"""The policy :func:`rlengine.load` returns (:mod:`rlengine.policy.load`): numpy observations in, actions
and the carried state out, on the traced TensorFlow step or its TensorFlow Lite conversion
(:mod:`rlengine.policy.backends`)::

    policy = rlengine.load("runs/ppo-CartPole-v1-20261201-120000")   # checkpoint="latest" | "best" | N
    action, state = policy.predict(observation)                     # one observation, or a batch of them
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator, Optional, Union

import attrs
import numpy as np
import tensorflow as tf

from rlengine.api import seeding
from rlengine.api.data import Nest, StepType, TimeStep
from rlengine.errors import LiteUnavailable, SpecMismatchError, telling_line
from rlengine.policy.arrays import NestLayout
from rlengine.policy.backends import LiteStep, TensorFlowStep, convert_to_lite, disagreement, probe_inputs, trace_step


@attrs.frozen(eq=False)  # arrays have no single truth value: states compare by identity
class PolicyState:
    """The state :meth:`Policy.predict` returns and takes back: the transformers' (frame stacks) and the
    algorithm's (an LSTM's), for ``batch_size`` episodes. Pass it back unchanged; None starts afresh."""

    flat: tuple  # numpy arrays [batch_size, ...], (transformer state, algorithm state) flattened
    batch_size: int


@contextlib.contextmanager
def drawing_from(generator: tf.random.Generator) -> Iterator[None]:
    """Trace with ``generator`` as the run's random generator (``rlengine.random``), then put the previous
    one back: a loaded policy samples from its own, and never advances a training run's."""
    previous = seeding._generator
    seeding._generator = generator
    try:
        yield
    finally:
        seeding._generator = previous


class Policy:
    """A trained run's policy: numpy observations in, actions out, in the environment's layout.

    Made by :func:`rlengine.load`. A calling loop, with a Gymnasium environment
    of the run's id::

        policy = rlengine.load("runs/x")
        obs, _ = env.reset()
        state, done = None, False
        while not done:
            action, state = policy.predict(obs, state)
            obs, reward, terminated, truncated, _ = env.step(action)
            done = terminated or truncated

    ``state`` is None for a policy without state; keep passing back what
    ``predict`` returned anyway, so the loop is right for every policy.
    Attributes: ``observation_spec`` and ``action_spec`` (one environment
    copy), ``checkpoint`` (the prefix restored), ``stateful``, and the
    restored ``algorithm`` and ``transformers`` (for inspection: changing
    their variables changes TensorFlow's step, not an already converted one).
    """

    def __init__(self, chain: Any, algorithm: Any, raw_spec: TimeStep, checkpoint: str, seed: int):
        self.checkpoint = checkpoint
        self.algorithm, self.transformers = algorithm, list(chain.transformers)
        self.observation_spec, self.action_spec = raw_spec.observation, algorithm.action_spec
        self._chain, self._algorithm, self._raw_spec = chain, algorithm, raw_spec
        self._observations = NestLayout(raw_spec.observation, "observation")
        self._actions = NestLayout(algorithm.action_spec, "action")
        self._num_actions = len(self._actions.specs)
        self._state_specs = tf.nest.flatten((chain.state_spec, algorithm.state_spec))
        self.stateful = bool(self._state_specs)
        self._initial_states: dict = {}
        self._generator = tf.random.Generator.from_seed(seed)
        with drawing_from(self._generator):
            self._greedy_tf = TensorFlowStep(trace_step(chain, algorithm, raw_spec, sample=False))
        # replaced by the TensorFlow Lite step once it is converted and checked
        self._greedy: Union[TensorFlowStep, LiteStep] = self._greedy_tf
        self._sampling: Optional[TensorFlowStep] = None  # traced on first use
        self._converting: Optional[threading.Thread] = None
        self.conversion_error: Optional[str] = None  # why the greedy step runs on TensorFlow, if it does

    # -- acting ---------------------------------------------------------------------------
    def predict(self, observation: Nest, state: Optional[PolicyState] = None, episode_start: Any = None,
                deterministic: bool = True) -> tuple[Nest, Optional[PolicyState]]:
        """``(action, state)`` for one observation (the spec's shape) or a batch (a leading dimension).

        ``state`` is what the previous call returned; None starts new
        episodes (every row's first step). ``episode_start`` (a bool, or one
        per row) marks rows whose observation begins a new episode, when
        ``state`` is carried across episodes. Transformers apply with the
        checkpoint's statistics and never update them. ``deterministic=False``
        samples from the exploration policy (``rollout``) instead of the
        greedy one. Actions are clipped to the action bounds, as in evaluation.
        """
        arrays, batch = self._observations.arrays(observation)
        rows = 1 if batch is None else batch
        if state is None:
            step_type = np.zeros([rows], np.int32)  # StepType.FIRST
            flat_state = self._initial_state(rows)
        else:
            flat_state = self._check_state(state, rows)
            step_type = self._step_type(episode_start, rows)
        step = self._greedy if deterministic else self._sampling_step()
        outputs = step([*arrays, step_type, *flat_state])
        action = self._actions.pack(outputs[:self._num_actions], single=batch is None)
        return action, (PolicyState(tuple(outputs[self._num_actions:]), rows) if self.stateful else None)

    def _initial_state(self, rows: int) -> tuple:
        """The chain's and algorithm's initial state for ``rows`` episodes (not zeros for every plugin)."""
        state = self._initial_states.get(rows)
        if state is None:
            nest = (self._chain.initial_state(rows), self._algorithm.initial_state(rows))
            state = self._initial_states[rows] = tuple(np.asarray(x) for x in tf.nest.flatten(nest))
        return state

    def _check_state(self, state: Any, rows: int) -> tuple:
        if not isinstance(state, PolicyState):
            raise SpecMismatchError(f"state is {type(state).__name__}: pass what predict() returned, or None "
                                    "to start new episodes")
        if state.batch_size != rows:
            raise SpecMismatchError(f"state holds {state.batch_size} episode(s) but the observation is for {rows}: "
                                    "pass state=None to start new episodes")
        return state.flat

    @staticmethod
    def _step_type(episode_start: Any, rows: int) -> np.ndarray:
        if episode_start is None:
            return np.ones([rows], np.int32)  # StepType.MID
        starts = np.asarray(episode_start, bool).reshape(-1)
        if starts.size not in (1, rows):
            raise SpecMismatchError(f"episode_start has {starts.size} values for {rows} observation(s): give one "
                                    "bool, or one per row")
        return np.where(np.broadcast_to(starts, [rows]), StepType.FIRST, StepType.MID).astype(np.int32)

    def _sampling_step(self) -> TensorFlowStep:
        if self._sampling is None:
            with drawing_from(self._generator):
                self._sampling = TensorFlowStep(trace_step(self._chain, self._algorithm, self._raw_spec, sample=True))
        return self._sampling

    # -- the TensorFlow Lite step ---------------------------------------------------------
    @property
    def backend(self) -> str:
        """What runs the greedy step now: ``"tflite"`` or ``"tensorflow"``."""
        return self._greedy.backend

    def convert(self) -> None:
        """Convert the greedy step to TensorFlow Lite, check it on probe inputs, and use it from now on.

        Raises :class:`LiteUnavailable` (one line) when the conversion fails or
        the converted step disagrees with TensorFlow; the policy then goes on
        with TensorFlow.
        """
        try:
            signature = [*self._observations.specs, tf.TensorSpec([], tf.int32), *self._state_specs]
            model = convert_to_lite(self._greedy_tf.function, [self._chain, self._algorithm])
            lite = LiteStep(model, [s.shape.as_list() for s in signature], len(self._greedy_tf.keys),
                            len(self._observations.specs))
            probe = probe_inputs(self._observations.specs, self._initial_state(3), batch=3)
            why = disagreement(self._greedy_tf, lite, probe, len(self._observations.specs), self._num_actions)
        except Exception as exc:  # the converter raises many kinds; any means: stay on TensorFlow
            why = f"{type(exc).__name__}: {telling_line(str(exc))}"
        if why:
            self.conversion_error = why
            raise LiteUnavailable(f"the greedy step of {self.checkpoint} cannot run on TensorFlow Lite ({why}); "
                                  "load it with backend='tensorflow'")
        self._greedy = lite

    def convert_in_background(self) -> None:
        """Start :meth:`convert` in a thread; ``predict`` runs TensorFlow until it is done."""

        def quietly() -> None:
            with contextlib.suppress(LiteUnavailable):  # kept in conversion_error
                self.convert()

        # not a daemon: one killed mid-conversion at interpreter exit aborts the process; exit waits for it
        self._converting = threading.Thread(target=quietly, name="rlengine-tflite-conversion", daemon=False)
        self._converting.start()

    def wait_for_conversion(self, timeout: Optional[float] = None) -> str:
        """Wait for a background conversion to end (``timeout`` seconds at most); returns :attr:`backend`."""
        if self._converting is not None:
            self._converting.join(timeout)
        return self.backend

    def __repr__(self) -> str:
        return f"<rlengine.Policy {self.checkpoint} on {self.backend}>"
