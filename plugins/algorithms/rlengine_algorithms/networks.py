"""Policy and value networks: MLP torsos, an optional LSTM (Keras's cell for the actor-critic, :class:`LSTM` for
recurrent DQN, which needs a target copy), action heads."""

from __future__ import annotations

import numbers

import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp
import tf_keras

from rlengine import ConfigError
from rlengine_algorithms.masking import mask_values

tfd = tfp.distributions


def positive_sizes(instance, attribute, value) -> None:
    """attrs validator of layer widths: a list of positive integers (empty: no hidden layer).

    A zero width makes oneDNN abort the whole process on the first matmul and
    a negative one fails deep inside TensorFlow, so both are refused here, as
    a ConfigError naming the key, before any network is built.
    """
    def positive(width) -> bool:
        return isinstance(width, numbers.Integral) and not isinstance(width, bool) and width >= 1

    if not isinstance(value, (list, tuple)) or not all(positive(w) for w in value):
        raise ValueError(f"'{attribute.name}' must be a list of positive integers (layer widths), got {value!r}")


def flatten_observation(observation) -> tf.Tensor:
    """Concatenate every leaf of an observation nest into ``[B, features]`` floats."""
    leaves = tf.nest.flatten(observation)
    batch = tf.shape(leaves[0])[0]
    return tf.concat([tf.reshape(tf.cast(x, tf.float32), [batch, -1]) for x in leaves], axis=-1)


def orthogonal(shape, gain: float) -> tf.Tensor:
    """An orthogonal matrix scaled by ``gain`` (seeded by TensorFlow's global seed)."""
    rows, cols = shape
    q, r = tf.linalg.qr(tf.random.normal([max(rows, cols), min(rows, cols)]))
    q = q * tf.sign(tf.linalg.diag_part(r))  # make the decomposition unique
    return gain * (q if rows >= cols else tf.transpose(q))


class Dense(tf.Module):
    """``activation(x @ w + b)``; built now when ``in_size`` is given (encoders), else on first call,
    when the input width is known.

    A plain module rather than a Keras layer: Keras layers cost a quarter of a
    second to construct on first use and add tracing overhead on every call.
    """

    def __init__(self, units: int, gain: float, activation=None, name: str = "dense", in_size: int = 0):
        super().__init__(name=name)
        self.units, self.gain, self.activation = units, gain, activation
        self.w = None
        if in_size:
            self._build(in_size)

    def _build(self, in_size: int) -> None:
        with self.name_scope:
            self.w = tf.Variable(orthogonal([in_size, self.units], self.gain), name="w")
            self.b = tf.Variable(tf.zeros([self.units]), name="b")

    def __call__(self, x):
        if self.w is None:
            self._build(int(x.shape[-1]))
        y = tf.matmul(x, self.w) + self.b
        return self.activation(y) if self.activation else y


class MLP(tf.Module):
    """Dense layers with orthogonal init (gain sqrt 2); built now when ``in_size`` is given."""

    def __init__(self, sizes, activation: str, name: str, in_size: int = 0):
        super().__init__(name=name)
        fn = ACTIVATIONS[activation]
        widths = [in_size, *sizes] if in_size else [0] * (len(sizes) + 1)
        self.layers = [Dense(n, np.sqrt(2), fn, name=f"dense_{i}", in_size=widths[i]) for i, n in enumerate(sizes)]
        self.output_size = sizes[-1] if sizes else in_size

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


ACTIVATIONS = {"tanh": tf.tanh, "relu": tf.nn.relu, "elu": tf.nn.elu}


def dense(units: int, gain: float, name: str) -> Dense:
    return Dense(units, gain, name=name)


class ActionHead(tf.Module):
    """Maps features to the action distribution for one (unnested) action spec."""

    def __init__(self, action_spec, algorithm: str, init_log_std: float = 0.0):
        super().__init__(name="action_head")
        if tf.nest.is_nested(action_spec):
            raise ConfigError(f"algorithm {algorithm!r} supports a single action tensor, not the nest "
                              f"{action_spec}; flatten the action space in the environment")
        self.spec = action_spec
        if action_spec.dtype.is_integer:
            if action_spec.shape.rank != 0:
                raise ConfigError(f"algorithm {algorithm!r} supports Discrete actions, not integer actions "
                                  f"of shape {action_spec.shape} (MultiDiscrete)")
            self.num_actions = int(action_spec.maximum - action_spec.minimum + 1)
            self.offset = int(action_spec.minimum)
            self.logits = dense(self.num_actions, 0.01, "logits")
        else:
            self.size = int(np.prod(action_spec.shape))
            self.mean = dense(self.size, 0.01, "mean")
            self.log_std = tf.Variable(tf.fill([self.size], float(init_log_std)), name="log_std")

    @property
    def discrete(self) -> bool:
        return self.spec.dtype.is_integer

    def __call__(self, features, action_mask=None) -> tfd.Distribution:
        """The action distribution; illegal actions of ``action_mask`` ``[B, num_actions]`` get no probability."""
        if self.discrete:
            return tfd.Categorical(logits=mask_values(self.logits(features), action_mask), dtype=self.spec.dtype)
        loc = tf.reshape(self.mean(features), [-1, *self.spec.shape])
        scale = tf.reshape(tf.exp(self.log_std), self.spec.shape) * tf.ones_like(loc)
        return tfd.Independent(tfd.Normal(loc, scale), reinterpreted_batch_ndims=self.spec.shape.rank)

    def offset_action(self, action):
        """Categorical samples count from 0; the spec may start elsewhere."""
        return action + self.offset if self.discrete and self.offset else action

    def unoffset_action(self, action):
        return action - self.offset if self.discrete and self.offset else action


class Torso(tf.Module):
    """Observation -> features for the actor and for the critic.

    The encoder (shared, or the actor's with ``critic_encoder`` the critic's)
    feeds separate actor and critic MLPs; with an LSTM, a shared LSTM sits
    between the (shared) encoder and both MLPs and its ``(h, c)`` is the state.
    """

    def __init__(self, encoder, critic_encoder, hidden_sizes, lstm_size: int, activation: str):
        super().__init__(name="torso")
        self.encoder, self.critic_encoder = encoder, critic_encoder
        self.lstm_size = lstm_size
        # Keras's cell, not the LSTM module below: their weights and arithmetic match, but a module lists its
        # variables by name and Keras by creation, and the optimizer's saved slots follow that order, so saved
        # PPO-LSTM runs would no longer restore
        self.lstm = tf_keras.layers.LSTMCell(lstm_size) if lstm_size else None
        self.actor = MLP(hidden_sizes, activation, "actor_mlp")
        self.critic = MLP(hidden_sizes, activation, "critic_mlp")

    @property
    def state_spec(self):
        if not self.lstm_size:
            return ()
        return (tf.TensorSpec([self.lstm_size], tf.float32), tf.TensorSpec([self.lstm_size], tf.float32))

    def __call__(self, observation, state):
        x, state = self._shared(observation, state)
        return self.actor(x), self._critic(observation, x), state

    def actor_features(self, observation, state):
        """``(actor features, state)`` alone: acting needs no value."""
        x, state = self._shared(observation, state)
        return self.actor(x), state

    def critic_features(self, observation):
        """The critic's features alone; without an LSTM only, whose state the critic would need."""
        if self.lstm is not None:
            raise ValueError("with an LSTM the critic's features need the state: call the torso itself")
        return self._critic(observation, None if self.critic_encoder is not None else self.encoder(observation))

    def _shared(self, observation, state):
        x = self.encoder(observation)
        if self.lstm is not None:
            x, new_state = self.lstm(x, list(state))
            state = tuple(new_state)
        return x, state

    def _critic(self, observation, x):
        return self.critic(x if self.critic_encoder is None else self.critic_encoder(observation))


class LSTM(tf.Module):
    """An LSTM cell (``i, f, g, o`` gates, forget bias 1) with state ``(h, c)``, built eagerly."""

    def __init__(self, in_size: int, units: int, name: str = "lstm", trainable: bool = True):
        super().__init__(name=name)
        self.units = units
        with self.name_scope:
            kernel = tf.concat([orthogonal([in_size, units], 1.0) for _ in range(4)], axis=1)
            recurrent = tf.concat([orthogonal([units, units], 1.0) for _ in range(4)], axis=1)
            bias = np.zeros(4 * units, np.float32)
            bias[units:2 * units] = 1.0
            self.kernel = tf.Variable(kernel, trainable=trainable, name="kernel")
            self.recurrent_kernel = tf.Variable(recurrent, trainable=trainable, name="recurrent_kernel")
            self.bias = tf.Variable(bias, trainable=trainable, name="bias")

    def copy(self, name: str) -> "LSTM":
        """A non-trainable copy with the same values (a target network)."""
        target = LSTM(int(self.kernel.shape[0]), self.units, name, trainable=False)
        for t, s in zip(target.variables_in_order, self.variables_in_order):
            t.assign(s)
        return target

    @property
    def variables_in_order(self) -> list:
        return [self.kernel, self.recurrent_kernel, self.bias]

    def __call__(self, x, state):
        h, c = state
        z = tf.matmul(x, self.kernel) + tf.matmul(h, self.recurrent_kernel) + self.bias
        i, f, g, o = tf.split(z, 4, axis=-1)
        c = tf.sigmoid(f) * c + tf.sigmoid(i) * tf.tanh(g)
        h = tf.sigmoid(o) * tf.tanh(c)
        return h, (h, c)
