"""Pieces shared by the off-policy algorithms (SAC, TD3, DQN).

* :class:`StackedMLP`: several same-shaped MLPs (twin critics) whose layers are
  stacked variables, built eagerly so target copies exist at once.
* :func:`to_transitions`: replayed ``[T, B]`` sequences -> n-step transitions.
* :class:`OffPolicyAlgorithm`: the replay attributes from the config, several
  optimizers, target-network updates every ``period`` applied updates.
"""

from __future__ import annotations

from typing import NamedTuple

import attrs
import numpy as np
import tensorflow as tf

from rlengine import Algorithm, ConfigError, StepType, n_step_return
from rlengine_algorithms.networks import ACTIVATIONS, orthogonal, positive_sizes

_v = attrs.validators


@attrs.define(kw_only=True)
class OffPolicyConfig:
    """Replay and update-rate options every off-policy algorithm takes."""

    #: registered encoder that turns observations into features, options in its own section ([nature_cnn], ...)
    encoder: str = attrs.field(default="flatten", validator=_v.instance_of(str))
    #: MLP widths of the actor and of each critic after the encoder, each > 0 ([]: no hidden layer); keep
    #: hidden layers with a CNN encoder too: the critics take the action in here
    hidden_sizes: list = attrs.field(factory=lambda: [256, 256], validator=positive_sizes)
    gamma: float = attrs.field(default=0.99, validator=[_v.ge(0), _v.le(1)])  # discount of future rewards, per step
    mini_batch_size: int = attrs.field(default=256, validator=_v.gt(0))  # replayed sequences per update
    mini_batch_length: int = attrs.field(default=2, validator=_v.ge(2))  # n-step returns, n = length - 1
    num_updates_per_iteration: int = attrs.field(default=0, validator=_v.ge(0))  # 0: one per env step the unroll collected
    #: env steps (all copies) of uniformly random actions before training starts; at least num_envs x mini_batch_length
    initial_collect_steps: int = attrs.field(default=1000, validator=_v.ge(0))
    replay_capacity: int = attrs.field(default=1_000_000, validator=_v.gt(0))  # rows, all copies together
    prioritized_replay: bool = False  # sample sequences by |TD error| ** priority_alpha, not uniformly
    priority_alpha: float = attrs.field(default=0.6, validator=_v.ge(0))  # priority exponent; 0: uniform
    #: exponent of the importance weights that correct prioritized sampling (1: fully, 0: not at all); constant
    priority_beta: float = attrs.field(default=0.4, validator=_v.ge(0))
    #: dtype of the matmuls from one hidden layer to the next: "bfloat16" runs them on the CPU's bfloat16
    #: units (AMX, AVX512-BF16) or a GPU's tensor cores, with float32 weights, inputs and outputs; the first
    #: layer and the heads stay float32 (docs/configuration.md#bfloat16-hidden-layers)
    hidden_matmul_dtype: str = attrs.field(default="float32", validator=_v.in_(["float32", "bfloat16"]))


REPLAY_KEYS = ("mini_batch_size", "mini_batch_length", "num_updates_per_iteration", "initial_collect_steps",
               "replay_capacity", "prioritized_replay", "priority_alpha", "priority_beta")


def encode(observation, encoders) -> list:
    """Each encoder's features of ``observation``; an encoder listed twice runs once."""
    done = {}
    for encoder in encoders:
        if id(encoder) not in done:
            done[id(encoder)] = encoder(observation)
    return [done[id(encoder)] for encoder in encoders]


def trainable_of(modules) -> list:
    """The trainable variables of several modules, in order (a module listed twice counts once)."""
    return [v for m in dict.fromkeys(modules) for v in m.trainable_variables]


def variables_of(modules) -> list:
    """The variables of several modules, in order (a module listed twice counts once)."""
    return [v for m in dict.fromkeys(modules) for v in m.variables]


def target_encoder(algorithm, encoder, scope: str):
    """A non-trainable copy of ``encoder`` for a target network (``encoder`` itself if it has no variables)."""
    return algorithm.copy_encoder(encoder, scope) if encoder.variables else encoder


class StackedMLP(tf.Module):
    """``num`` independent MLPs of the same shape, kept as stacked variables.

    Input ``[B, in]`` (shared by all members) or ``[num, B, in]``; output
    ``[num, B, out]``. Each layer's weights are one ``[num, in, out]``
    variable (one optimizer slot, one target copy, one Polyak op), but each
    member runs its own matmul chain: a batched matmul of the twin critics
    forward and backward took 1.2-1.4x the time of two plain ones on this CPU.
    Variables are created here, from the known input width, so target copies
    can be made right away.
    """

    def __init__(self, num: int, in_size: int, hidden_sizes, out_size: int, out_gain: float,
                 activation: str = "relu", name: str = "mlp", hidden_matmul_dtype: str = "float32"):
        super().__init__(name=name)
        self.num = num
        self.activation = ACTIVATIONS[activation]
        self.hidden_matmul_dtype = tf.as_dtype(hidden_matmul_dtype)
        sizes = [in_size, *hidden_sizes, out_size]
        self.weights, self.biases = [], []
        with self.name_scope:
            for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
                gain = out_gain if i == len(sizes) - 2 else np.sqrt(2)
                w = tf.stack([orthogonal([n_in, n_out], gain) for _ in range(num)])
                self.weights.append(tf.Variable(w, name=f"w{i}"))
                # [num, 1, out]: the 1 broadcasts over the batch
                self.biases.append(tf.Variable(tf.zeros([num, 1, n_out]), name=f"b{i}"))

    def copy(self, name: str) -> "StackedMLP":
        """A non-trainable copy with the same values (a target network)."""
        target = StackedMLP.__new__(StackedMLP)
        tf.Module.__init__(target, name=name)
        target.num, target.activation, target.hidden_matmul_dtype = self.num, self.activation, self.hidden_matmul_dtype
        with target.name_scope:
            target.weights = [tf.Variable(w, trainable=False, name=f"w{i}") for i, w in enumerate(self.weights)]
            target.biases = [tf.Variable(b, trainable=False, name=f"b{i}") for i, b in enumerate(self.biases)]
        return target

    def __call__(self, x, members: int = 0):
        """Evaluate the first ``members`` MLPs (0: all); ``[B, in]`` or ``[num, B, in]`` in."""
        return self.features_and_output(x, members)[1]

    def features_and_output(self, x, members: int = 0):
        """``(input of the last layer, output)``: the features a linear head sees, and what it gives."""
        k = members or self.num
        inputs = [x] * k if x.shape.rank == 2 else tf.unstack(x, num=self.num)[:k]
        features, outputs = [], []
        layers = [(tf.unstack(w, num=self.num), tf.unstack(b, num=self.num))
                  for w, b in zip(self.weights, self.biases)]
        last = len(layers) - 1
        for m, h in enumerate(inputs):
            for i, (w, b) in enumerate(layers):
                if i == last:
                    features.append(h)
                h = matmul(h, w[m], self.hidden_matmul_dtype if 0 < i < last else tf.float32) + b[m]
                if i < last:
                    h = self.activation(h)
            outputs.append(h)
        return tf.stack(features), tf.stack(outputs)


def matmul(x, w, dtype: tf.DType):
    """``x @ w`` computed in ``dtype``, float32 in and out: with bfloat16 the CPU's AMX tiles multiply 256-wide
    layers 5.5 times as fast as float32 here (the products are summed in float32, the result rounded to
    bfloat16); the gradients flow through the casts to the float32 variables."""
    if dtype == x.dtype:
        return tf.matmul(x, w)
    return tf.cast(tf.matmul(tf.cast(x, dtype), tf.cast(w, dtype)), x.dtype)


def soft_update(targets: list, sources: list, tau: float) -> None:
    """``target += tau * (source - target)``; tau = 1 copies."""
    for t, s in zip(targets, sources):
        if tau == 1.0:
            t.assign(s)
        else:
            t.assign_add(tau * (s - t))


class Transition(NamedTuple):
    """One replayed n-step transition per row (what ``train_step`` gets)."""

    observation: object  # nest of [B, ...] at row 0
    action: object  # [B, ...] taken at row 0
    reward: tf.Tensor  # n-step discounted reward
    discount: tf.Tensor  # gamma^k * env discount: multiplies the bootstrap value
    next_observation: object  # nest of [B, ...] at the bootstrap row
    mask: tf.Tensor  # 1 where row 0 starts a real transition (is not LAST)


def to_transitions(exp, gamma: float) -> Transition:
    """``[n + 1, B]`` sequences -> transitions from row 0 (no bootstrap across episodes)."""
    ret, discount, index = n_step_return(exp.reward, exp.discount, exp.step_type, gamma)
    length = int(exp.step_type.shape[0])
    if length == 2:  # the bootstrap row is row 1 wherever the mask is 1: skip the gather
        next_obs = tf.nest.map_structure(lambda o: o[1], exp.observation)
    else:
        rows = tf.stack([index, tf.range(tf.shape(index)[0], dtype=index.dtype)], axis=-1)
        next_obs = tf.nest.map_structure(lambda o: tf.gather_nd(o, rows), exp.observation)
    first = lambda nest: tf.nest.map_structure(lambda x: x[0], nest)  # noqa: E731
    mask = tf.cast(exp.step_type[0] != StepType.LAST, tf.float32)
    return Transition(first(exp.observation), first(exp.action), ret, discount, next_obs, mask)


def weighted_mean(x, mask, weight=None):
    """Mean of ``x`` over the valid rows, each scaled by its importance weight."""
    w = mask if weight is None else mask * weight
    return tf.reduce_sum(x * w) / tf.maximum(tf.reduce_sum(mask), 1.0)


class OffPolicyAlgorithm(Algorithm):
    """Base of SAC, TD3 and DQN.

    Subclasses fill ``self.optimizers`` with ``(optimizer, variables)`` pairs
    (together covering every trainable variable) and ``self.targets`` with
    ``(target_vars, source_vars)`` pairs updated every ``target_period``
    applied updates with ``target_tau``. The subclasses' Adam optimizers use
    ``jit_compile=False``: XLA-compiled updates cost tracing time and were no
    faster per update on CPU.
    """

    off_policy = True

    def __init__(self, time_step_spec, action_spec, config):
        super().__init__(time_step_spec, action_spec, config)
        for key in REPLAY_KEYS:  # the core reads these from the instance
            setattr(self, key, getattr(config, key))
        if tf.nest.is_nested(action_spec):
            raise ConfigError(f"algorithm {self.algorithm_name!r} supports a single action tensor, not the nest "
                              f"{action_spec}; flatten the action space in the environment")
        # Counts applied updates; drives delayed and periodic updates. Only
        # apply_gradients changes it, so the core's dummy step leaves it alone.
        self.num_updates = tf.Variable(0, dtype=tf.int64, trainable=False, name="num_updates")
        self.optimizers, self.targets = [], []
        self.target_period, self.target_tau = 1, 1.0

    @property
    def algorithm_name(self) -> str:
        return type(self).__name__.lower()

    def build(self) -> None:
        for optimizer, variables in self.optimizers:
            optimizer.build(variables)

    def apply_gradients(self, grads_and_vars: list) -> None:
        by_ref = {v.ref(): (g, v) for g, v in grads_and_vars}
        for optimizer, variables in self.optimizers:
            self.apply_group(optimizer, [by_ref[v.ref()] for v in variables])
        self.num_updates.assign_add(1)

    def apply_group(self, optimizer, grads_and_vars: list) -> None:
        """Apply one optimizer's gradients; TD3 delays its actor's here."""
        optimizer.apply_gradients(grads_and_vars)

    def after_update(self) -> None:
        def update():
            for targets, sources in self.targets:
                soft_update(targets, sources, self.target_tau)
            return tf.constant(0)

        if self.target_period == 1:
            update()
        else:
            tf.cond(self.num_updates % self.target_period == 0, update, lambda: tf.constant(0))
