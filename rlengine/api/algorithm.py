"""The Algorithm interface.

The core drives an algorithm like this (one training iteration, on-policy)::

    initial = state = algorithm.initial_state(batch_size)
    for t in range(unroll_length):          # inside one tf.function
        state = reset_where_first(time_step.step_type, state, initial)
        policy_step = algorithm.rollout(time_step, state)   # exploration
        experience.append(Experience.from_steps(time_step, policy_step, state))
        state = policy_step.state
        time_step = env.step(policy_step.action)
    batch = algorithm.preprocess_experience(stack(experience))   # e.g. GAE
    for minibatch in minibatches(batch):
        with tf.GradientTape() as tape:     # a recurrent policy: train_step once per time step, from the stored state
            policy_step = algorithm.train_step(minibatch, ())
        loss_info, grads_and_vars = algorithm.train_complete(tape, policy_step.info)
        algorithm.apply_gradients(grads_and_vars)
        algorithm.after_update()

``predict`` is the greedy policy used for evaluation, play and export.
All methods take and return nests with leading batch dimensions; the rollout
info may hold ``tfp`` distributions, which the core stores as parameters and
rebuilds before ``preprocess_experience`` and ``train_step``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import tensorflow as tf

from rlengine.api.data import Experience, LossInfo, Nest, PolicyStep, TimeStep, zeros_from_spec
from rlengine.api.noconfig import NoConfig


def untracked(module: tf.Module, name: str, value: Any) -> None:
    """Set an attribute that tf.Module must not track.

    tf.Module wraps dicts and lists it is given (and mutates nested ones in
    place), which breaks spec nests; specs hold no variables, so skip it.
    """
    object.__setattr__(module, name, value)


class Algorithm(tf.Module):
    """Base class of every algorithm plugin.

    Subclasses set ``config_class`` (an attrs class with validators; its
    section in the TOML file is the algorithm's registered name) and are
    built as ``cls(time_step_spec, action_spec, config)`` with the specs of
    one environment copy (no batch dimension), observations already
    transformed.

    ``super().__init__`` keeps ``self.time_step_spec`` and ``self.action_spec``
    (as given, untracked by ``tf.Module``), ``self.config`` (the instance of
    ``config_class`` from the run's section) and ``self.progress`` (a
    variable: the fraction of the run's env-step budget used so far).
    """

    config_class: ClassVar[type] = NoConfig
    #: Whether ``train_step`` needs the time dimension (recurrent policies).
    #: When False the core may flatten ``[T, B]`` into one batch.
    needs_time_dimension: ClassVar[bool] = False

    def __init__(self, time_step_spec: TimeStep, action_spec: Nest, config: Any):
        super().__init__(name=type(self).__name__)
        untracked(self, "time_step_spec", time_step_spec)
        untracked(self, "action_spec", action_spec)
        self.config = config
        #: Fraction of the run's env-step budget used so far, in [0, 1]; the
        #: trainer assigns it each iteration so schedules can depend on it.
        self.progress = tf.Variable(0.0, trainable=False, name="progress")

    def make_encoder(self, name: str, observation_spec: Nest = None, scope: str = "encoder") -> Any:
        """The run's encoder registered as ``name`` (see :mod:`rlengine.api.network`), for
        ``observation_spec`` (default: this algorithm's observation spec without its ``action_mask``).

        Call it from ``__init__``: the core builds algorithms where the run's encoders are in scope.
        """
        from rlengine.api.network import current_encoders, without_action_mask

        spec = without_action_mask(self.time_step_spec.observation) if observation_spec is None else observation_spec
        return current_encoders().make(name, spec, scope)

    def copy_encoder(self, encoder: Any, scope: str) -> Any:
        """A non-trainable copy of ``encoder`` with the same values (a target network's)."""
        from rlengine.api.network import current_encoders

        return current_encoders().copy(encoder, scope)

    # -- policy state -------------------------------------------------------
    @property
    def state_spec(self) -> Nest:
        """Spec of the policy state shared by predict, rollout and train_step."""
        return ()

    def initial_state(self, batch_size: int) -> Nest:
        """Zeros of ``state_spec`` with a leading batch dimension."""
        return zeros_from_spec(self.state_spec, [batch_size])

    # -- acting -------------------------------------------------------------
    def predict(self, time_step: TimeStep, state: Nest) -> PolicyStep:
        """The greedy policy: returns actions (tensors), next state and info."""
        raise NotImplementedError(f"{type(self).__name__} does not implement predict()")

    def rollout(self, time_step: TimeStep, state: Nest) -> PolicyStep:
        """The exploration policy used to collect experience.

        Must have no side effects: the core calls it once on zeros to prepare
        specs. ``info`` may hold distributions (stored as parameters).
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement rollout()")

    # -- learning -----------------------------------------------------------
    #: Passes over each batch of experience, and rows (sequences for
    #: recurrent algorithms) per minibatch; 0 means the whole batch.
    num_epochs: int = 1
    mini_batch_size: int = 0

    #: Off-policy algorithms learn from a replay buffer: each iteration the
    #: core stores the unroll, then runs ``num_updates_per_iteration``
    #: updates on ``[mini_batch_length, mini_batch_size]`` time-major
    #: sequences sampled from it (``preprocess_experience`` turns them into
    #: what ``train_step`` needs, e.g. transitions). ``initial_collect_steps``
    #: env steps (all copies) are collected with uniformly random actions first.
    #: A class attribute: pipelines read it from the class, before the algorithm is built.
    off_policy: bool = False
    mini_batch_length: int = 2
    num_updates_per_iteration: int = 0  # 0: one update per collected env step (num_envs x unroll_length)
    initial_collect_steps: int = 0
    replay_capacity: int = 100_000  # rows, all environment copies together
    #: Prioritized replay: ``train_complete`` gets importance weights as
    #: ``weight`` and returns per-sequence priorities in ``LossInfo.priority``.
    prioritized_replay: bool = False
    priority_alpha: float = 0.6
    priority_beta: float = 0.4
    #: Recurrent off-policy training starts each sampled sequence from the
    #: stored rollout state instead of zeros. Without it replay does not keep
    #: the policy state at all (e.g. exploration noise held across steps), and
    #: sampled rows carry the initial state (zeros).
    use_rollout_state: bool = False

    def build(self) -> None:
        """Create optimizer slots before the first traced update.

        Called once after spec preparation (which created the variables):
        variables cannot be created inside the update's graph loops.
        """
        optimizer = getattr(self, "optimizer", None)
        if optimizer is not None:
            optimizer.build(self.trainable_variables)

    def preprocess_experience(self, experience: Experience) -> Experience:
        """Called on time-major ``[T, B]`` experience before minibatching.

        On-policy algorithms compute returns / advantages here and may drop
        the last (bootstrap) row. Default: unchanged.
        """
        return experience

    def train_step(self, experience: Experience, state: Nest) -> PolicyStep:
        """Recompute the policy on (replayed) experience, under the tape."""
        raise NotImplementedError(f"{type(self).__name__} does not implement train_step()")

    def train_complete(
        self, tape: tf.GradientTape, training_info: Nest, weight: Any = None
    ) -> tuple[LossInfo, list]:
        """Turn the tape and the infos of ``train_step`` into the loss and gradients.

        Returns ``(loss_info, grads_and_vars)``; the core applies the
        gradients with :meth:`apply_gradients` (after its own checks).
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement train_complete()")

    def apply_gradients(self, grads_and_vars: list) -> None:
        """Apply gradients; the default uses ``self.optimizer``."""
        self.optimizer.apply_gradients(grads_and_vars)

    def after_update(self) -> None:
        """Called after each applied update (target networks, counters)."""
        return None  # autograph cannot convert a body that is only a docstring
