"""{{ cookiecutter.algorithm_name }}: a softmax policy gradient with a learned value baseline.

A one-step actor-critic for discrete actions: the policy is a softmax over
``hidden -> logits``, the baseline a value head on the same hidden layer, and
each action is pushed up by how much better its one-step target
``r + gamma * V(next)`` was than ``V(now)``. It is deliberately small; the
comments marked ``YOUR ALGORITHM`` are where to put your own logic.

Rows follow rlengine's convention: ``reward[t + 1]`` and ``discount[t + 1]``
belong to the transition out of row ``t``, and a row whose step is LAST
starts no transition (the environment resets after it), so it carries no loss.
Import only what ``rlengine`` exports (``rlengine.__all__``): the rest of the
core may change without notice.
"""

import attrs
import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp
import tf_keras

import rlengine
from rlengine import Algorithm, LossInfo, PolicyStep, SpecMismatchError, StepType

_positive = attrs.validators.gt(0)
_non_negative = attrs.validators.ge(0)


@attrs.define(kw_only=True)
class PolicyGradientConfig:
    """Options, read from the TOML section ``[{{ cookiecutter.algorithm_name }}]``
    (``--set {{ cookiecutter.algorithm_name }}.learning_rate=0.01`` on the command line)."""

    # YOUR ALGORITHM: every option needs a type, a default and a validator.
    hidden_size: int = attrs.field(default=32, validator=_positive)  # width of the shared hidden layer
    learning_rate: float = attrs.field(default=0.01, validator=_positive)  # Adam step size
    gamma: float = attrs.field(default=0.9, validator=[_non_negative, attrs.validators.le(1)])  # discount
    value_coef: float = attrs.field(default=0.5, validator=_non_negative)  # weight of the baseline's loss
    entropy_coef: float = attrs.field(default=0.01, validator=_non_negative)  # bonus that keeps exploring


class PolicyGradient(Algorithm):
    config_class = PolicyGradientConfig

    def __init__(self, time_step_spec, action_spec, config):
        super().__init__(time_step_spec, action_spec, config)
        _check_flat_observation(time_step_spec.observation)
        self.action_minimum, num_actions = _discrete_actions(action_spec)
        # YOUR ALGORITHM: the networks. Keras layers assigned to attributes are
        # tracked, so checkpoints and `self.trainable_variables` include them.
        self.hidden = tf_keras.layers.Dense(config.hidden_size, activation="tanh")
        self.logits = tf_keras.layers.Dense(num_actions, kernel_initializer="zeros")  # starts uniform
        self.value = tf_keras.layers.Dense(1)
        self.optimizer = tf_keras.optimizers.Adam(config.learning_rate)

    def _evaluate(self, observation):
        """The action distribution and the value estimate of a batch of observations."""
        features = self.hidden(tf.reshape(tf.cast(observation, tf.float32), [tf.shape(observation)[0], -1]))
        dist = tfp.distributions.Categorical(logits=self.logits(features), dtype=self.action_spec.dtype)
        return dist, tf.squeeze(self.value(features), -1)

    # -- acting: no side effects here, the core also calls these to learn shapes --
    def predict(self, time_step, state):
        """The greedy policy (evaluation, play, export)."""
        dist, _ = self._evaluate(time_step.observation)
        return PolicyStep(dist.mode() + self.action_minimum, state, ())

    def rollout(self, time_step, state):
        """The exploring policy that collects experience; its info is stored with each row."""
        dist, value = self._evaluate(time_step.observation)
        # Draw through the run's generator, not TensorFlow's global one: it is
        # checkpointed, so a resumed run samples what the original would have.
        action = dist.sample(seed=rlengine.random.seed()) + self.action_minimum
        return PolicyStep(action, state, {"value": value})

    # -- learning -----------------------------------------------------------
    def preprocess_experience(self, exp):
        """``[T + 1, B]`` collected rows -> the ``T`` rows to train on, with their advantages."""
        value = exp.rollout_info["value"]
        # YOUR ALGORITHM: returns and advantages (n-step returns, GAE, ...).
        target = exp.reward[1:] + self.config.gamma * exp.discount[1:] * value[1:]
        batch = {
            "target": target,
            "advantage": target - value[:-1],
            "mask": tf.cast(exp.step_type[:-1] != StepType.LAST, tf.float32),
        }
        rows = tf.nest.map_structure(lambda t: t[:-1], exp._replace(rollout_info=()))
        return rows._replace(rollout_info=batch)

    def train_step(self, exp, state):
        """Recompute the policy on the stored rows, under the core's gradient tape."""
        dist, value = self._evaluate(exp.observation)
        info = dict(exp.rollout_info, value=value, entropy=dist.entropy(),
                    log_prob=dist.log_prob(exp.action - self.action_minimum))
        return PolicyStep((), state, info)

    def train_complete(self, tape, info, weight=None):
        """The loss and its gradients; the core applies them (and skips non-finite ones)."""
        cfg = self.config
        with tape:
            mask = info["mask"] if weight is None else info["mask"] * weight
            count = tf.maximum(tf.reduce_sum(mask), 1.0)

            def mean(x):
                return tf.reduce_sum(x * mask) / count

            # YOUR ALGORITHM: the loss. The advantage is a constant here: the
            # policy term must not train the baseline.
            policy = mean(-info["log_prob"] * tf.stop_gradient(info["advantage"]))
            value = mean(tf.square(tf.stop_gradient(info["target"]) - info["value"]))
            entropy = mean(info["entropy"])
            loss = policy + cfg.value_coef * value - cfg.entropy_coef * entropy
        variables = self.trainable_variables
        grads = tape.gradient(loss, variables)
        # Each extra is written to the summaries as loss/<name>.
        return LossInfo(loss, {"policy": policy, "value": value, "entropy": entropy}), list(zip(grads, variables))


def _check_flat_observation(observation_spec):
    if not isinstance(observation_spec, tf.TensorSpec):
        raise SpecMismatchError(
            f"algorithm '{{ cookiecutter.algorithm_name }}' needs one observation tensor, but the environment "
            f"gives {observation_spec}; flatten it with an observation transformer or pick another environment"
        )


def _discrete_actions(action_spec):
    """``(minimum, count)`` of a scalar integer action spec with bounds, or a clear error."""
    bounded = hasattr(action_spec, "minimum") and hasattr(action_spec, "maximum")
    if not (bounded and action_spec.dtype.is_integer and action_spec.shape.rank == 0):
        raise SpecMismatchError(
            f"algorithm '{{ cookiecutter.algorithm_name }}' needs one discrete action (a bounded scalar integer "
            f"spec), but the environment's action spec is {action_spec}; pick an environment with discrete actions"
        )
    minimum, maximum = int(np.min(action_spec.minimum)), int(np.max(action_spec.maximum))
    return minimum, maximum - minimum + 1
