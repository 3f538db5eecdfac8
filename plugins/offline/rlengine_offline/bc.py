"""Behaviour cloning (``bc``): a policy fit by supervised learning to a dataset's actions.

The observation goes through the run's encoder (``encoder``, so pixel datasets take ``nature_cnn``), an
MLP, then the algorithms plugin's action head: discrete actions are fit by cross-entropy (the negative
log-likelihood of a categorical), continuous ones by the squared error of the head's mean (``loss =
"mse"``) or by a Gaussian's negative log-likelihood with a learnt state-independent std (``"gaussian"``).
The greedy policy is the categorical's mode, or the mean. It learns from dataset rows one at a time
(``mini_batch_length = 1``); a LAST row takes no action, so it is left out of the loss.
"""

from __future__ import annotations

from typing import NamedTuple

import attrs
import tensorflow as tf
from rlengine_algorithms.networks import MLP, ActionHead, positive_sizes
from rlengine_algorithms.optimizers import FusedAdam

from rlengine import Algorithm, LossInfo, PolicyStep, StepType

_v = attrs.validators


@attrs.define(kw_only=True)
class BCConfig:
    """Options of ``bc`` (TOML section ``[bc]``)."""

    learning_rate: float = attrs.field(default=1e-3, validator=_v.gt(0))  # Adam step size
    mini_batch_size: int = attrs.field(default=256, validator=_v.gt(0))  # dataset rows per update
    #: registered encoder that turns observations into features, options in its own section
    encoder: str = attrs.field(default="flatten", validator=_v.instance_of(str))
    hidden_sizes: list = attrs.field(factory=lambda: [256, 256], validator=positive_sizes)  # MLP after the encoder
    activation: str = attrs.field(default="relu", validator=_v.in_(["tanh", "relu", "elu"]))  # of the MLP
    #: continuous actions: "mse" (squared error of the mean) or "gaussian" (negative log-likelihood)
    loss: str = attrs.field(default="mse", validator=_v.in_(["mse", "gaussian"]))


class BCInfo(NamedTuple):
    loss: tf.Tensor  # [B] per-row loss
    mask: tf.Tensor  # [B] 1 where the row took an action (not LAST)
    accuracy: tf.Tensor  # [B] discrete: the mode is the dataset's action; continuous: zeros


class BC(Algorithm):
    config_class = BCConfig
    off_policy = True  # its updates sample rows from a replay buffer (the offline pipeline's, of the dataset)
    mini_batch_length = 1

    def __init__(self, time_step_spec, action_spec, config):
        super().__init__(time_step_spec, action_spec, config)
        self.mini_batch_size = config.mini_batch_size
        self.encoder = self.make_encoder(config.encoder)
        self.mlp = MLP(config.hidden_sizes, config.activation, "mlp", in_size=self.encoder.output_size)
        self.head = ActionHead(action_spec, "bc")
        self.optimizer = FusedAdam(config.learning_rate, jit_compile=False)

    def _distribution(self, observation):
        return self.head(self.mlp(self.encoder(observation)))

    def _greedy(self, observation):
        distribution = self._distribution(observation)
        if self.head.discrete:
            return self.head.offset_action(distribution.mode())
        return distribution.mean()

    def predict(self, time_step, state) -> PolicyStep:
        return PolicyStep(self._greedy(time_step.observation), state, ())

    def rollout(self, time_step, state) -> PolicyStep:
        return self.predict(time_step, state)  # nothing is collected: used only for the specs' dry run

    def preprocess_experience(self, experience):
        return tf.nest.map_structure(lambda x: x[0], experience)  # [1, B] sampled rows -> [B]

    def train_step(self, batch, state) -> PolicyStep:
        distribution = self._distribution(batch.observation)
        action = self.head.unoffset_action(batch.action)
        mask = tf.cast(tf.not_equal(batch.step_type, StepType.LAST), tf.float32)
        if self.head.discrete:
            loss = -distribution.log_prob(action)
            accuracy = tf.cast(tf.equal(distribution.mode(), action), tf.float32)
        else:
            error = tf.reshape(tf.square(distribution.mean() - action), [tf.shape(action)[0], -1])
            loss = tf.reduce_sum(error, -1) if self.config.loss == "mse" else -distribution.log_prob(action)
            accuracy = tf.zeros_like(loss)
        return PolicyStep((), state, BCInfo(loss, mask, accuracy))

    def train_complete(self, tape, info: BCInfo, weight=None):
        rows = tf.maximum(tf.reduce_sum(info.mask), 1.0)
        with tape:
            loss = tf.reduce_sum(info.loss * info.mask) / rows
        variables = self.trainable_variables
        diagnostics = {"accuracy": tf.reduce_sum(info.accuracy * info.mask) / rows} if self.head.discrete else {}
        return LossInfo(loss, {"bc": loss}, (), diagnostics), list(zip(tape.gradient(
            loss, variables, unconnected_gradients="zero"), variables))
