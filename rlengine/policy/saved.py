"""The policy :func:`rlengine.load` returns (:mod:`rlengine.policy.load`): numpy observations in, actions
and the carried state out::

    policy = rlengine.load("runs/ppo-CartPole-v1-20261201-120000")   # checkpoint="latest" | "best" | N
    action, state = policy.predict(observation)                     # one observation, or a batch of them

No TensorFlow here: the steps come from :class:`~rlengine.policy.traced.TracedSteps` (the restored run,
traced in TensorFlow and converted to a LiteRT model) or :class:`~rlengine.policy.cache.CachedSteps`
(that model, cached beside the checkpoint, on LiteRT and NumPy alone).
"""

from __future__ import annotations

from typing import Any, Optional

import attrs
import numpy as np

from rlengine.errors import SpecMismatchError
from rlengine.policy.arrays import Nest, NestLayout
from rlengine.policy.lite import uniform_noise

FIRST, MID = 0, 1  # rlengine.StepType's values, without importing TensorFlow


@attrs.frozen(eq=False)  # arrays have no single truth value: states compare by identity
class PolicyState:
    """The state :meth:`Policy.predict` returns and takes back: the transformers' (frame stacks) and the
    algorithm's (an LSTM's), for ``batch_size`` episodes. Pass it back unchanged; None starts afresh."""

    flat: tuple  # numpy arrays [batch_size, ...], (transformer state, algorithm state) flattened
    batch_size: int


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
    copy), ``checkpoint`` (the prefix restored), ``stateful``, ``backend``
    and ``interpreter`` (what runs the greedy step), and the restored
    ``algorithm`` and ``transformers`` (for inspection: changing their
    variables changes TensorFlow's step, not an already converted one; None
    when the policy came from its cached model without TensorFlow).
    """

    def __init__(self, steps: Any, checkpoint: str, seed: int):
        self.checkpoint = checkpoint
        self._steps = steps
        self.algorithm, self.transformers = steps.algorithm, steps.transformers
        self.observation_spec, self.action_spec = steps.observation_spec, steps.action_spec
        self._observations = NestLayout(steps.observation_spec, "observation")
        self._actions = NestLayout(steps.action_spec, "action")
        self._num_actions = len(self._actions.specs)
        self.stateful = steps.stateful
        self._noise = np.random.default_rng(seed)  # the converted sampling step's draws

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
            step_type = np.zeros([rows], np.int32)  # FIRST
            flat_state = self._steps.initial_state(rows)
        else:
            flat_state = self._check_state(state, rows)
            step_type = self._step_type(episode_start, rows)
        inputs = [*arrays, step_type, *flat_state]
        if deterministic:
            outputs = self._steps.greedy(inputs)
        else:
            step = self._steps.sampling()
            if step.noise is not None:
                inputs.append(uniform_noise(self._noise, step.noise_size(rows)))
            outputs = step(inputs)
        action = self._actions.pack(outputs[:self._num_actions], single=batch is None)
        return action, (PolicyState(tuple(outputs[self._num_actions:]), rows) if self.stateful else None)

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
            return np.full([rows], MID, np.int32)
        starts = np.asarray(episode_start, bool).reshape(-1)
        if starts.size not in (1, rows):
            raise SpecMismatchError(f"episode_start has {starts.size} values for {rows} observation(s): give one "
                                    "bool, or one per row")
        return np.where(np.broadcast_to(starts, [rows]), FIRST, MID).astype(np.int32)

    # -- the converted step ---------------------------------------------------------------
    @property
    def backend(self) -> str:
        """What runs the greedy step now: ``"tflite"`` (the converted model) or ``"tensorflow"``."""
        return self._steps.greedy.backend

    @property
    def interpreter(self) -> Optional[str]:
        """Which interpreter runs the converted model: ``"litert"`` (``ai_edge_litert``), ``"tf.lite"``
        (TensorFlow's, where LiteRT is not installed), or None while TensorFlow runs the step."""
        return self._steps.greedy.interpreter

    @property
    def sampling_backend(self) -> str:
        """What runs ``predict(..., deterministic=False)``: ``"tflite"`` (the sampling step converted with its
        randomness as an input, drawn from a NumPy generator of the policy's seed) or ``"tensorflow"``.
        Waits for a conversion under way."""
        return self._steps.sampling().backend

    @property
    def conversion_error(self) -> Optional[str]:
        """Why the greedy step runs on TensorFlow, if it does after a conversion."""
        return self._steps.conversion_error

    def convert(self) -> None:
        """Convert the greedy and sampling steps to LiteRT models, check them against TensorFlow on probe
        inputs, and use them from now on.

        Raises :class:`LiteUnavailable` (one line) when the greedy step cannot
        be converted or disagrees with TensorFlow; the policy then goes on
        with TensorFlow. A sampling step that cannot stays on TensorFlow.
        """
        self._steps.convert()

    def convert_in_background(self) -> None:
        """Start :meth:`convert` in a thread; ``predict`` runs TensorFlow until it is done."""
        self._steps.convert_in_background()

    def wait_for_conversion(self, timeout: Optional[float] = None) -> str:
        """Wait for a background conversion to end (``timeout`` seconds at most); returns :attr:`backend`."""
        self._steps.wait(timeout)
        return self.backend

    def __repr__(self) -> str:
        return f"<rlengine.Policy {self.checkpoint} on {self.interpreter or self.backend}>"
