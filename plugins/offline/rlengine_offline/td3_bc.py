"""TD3+BC (``td3_bc``, Fujimoto & Gu 2021, "A Minimalist Approach to Offline Reinforcement Learning").

TD3 from the algorithms plugin, its critics and targets unchanged, with the actor's objective
regularised toward the dataset's actions::

    actor loss = -lambda * mean Q1(s, pi(s)) + mean (pi(s) - a)^2,   lambda = alpha / mean |Q1(s, pi(s))|

``lambda`` is held constant in the gradient (the authors' code detaches it) and the squared error is
averaged over the batch and the action's dimensions, in the environment's action units, as their code
does. TD3's own loss is ``-mean q_policy``; here ``q_policy`` is ``lambda * Q1 - error`` per row, so its
update, delayed actor and targets are reused as they are.

With ``normalize_observations`` (the paper's default) every observation the networks see is
``(s - mean) / (std + 1e-3)``, the dataset's per-feature mean and std: the offline pipeline hands the
dataset's observations to :meth:`TD3BC.fit_dataset` once, when a run starts, and the statistics are
variables of the algorithm, so checkpoints keep them (a resumed run restores them, it does not refit)
and ``predict`` applies them to raw observations (``eval``, ``play``, ``export``, ``load().predict()``).
"""

from __future__ import annotations

import attrs
import numpy as np
import tensorflow as tf
from rlengine_algorithms.td3 import TD3, TD3Config

from rlengine import ConfigError, PolicyStep

_v = attrs.validators
#: added to the dataset's std before dividing (the paper's epsilon), so a constant feature stays finite
STD_EPSILON = 1e-3


@attrs.define(kw_only=True)
class TD3BCConfig(TD3Config):
    """Options of ``td3_bc`` (TOML section ``[td3_bc]``): TD3's, with the paper's defaults."""

    actor_lr: float = attrs.field(default=3e-4, validator=_v.gt(0))  # Adam step size of the actor
    critic_lr: float = attrs.field(default=3e-4, validator=_v.gt(0))  # Adam step size of the twin critics
    #: weight of the Q term against the behaviour-cloning term (lambda = alpha / mean |Q|); 0: pure BC
    alpha: float = attrs.field(default=2.5, validator=_v.ge(0))
    #: standardise observations by the dataset's mean and std (+ 1e-3), in training and when acting
    normalize_observations: bool = attrs.field(default=True, validator=_v.instance_of(bool))


class TD3BC(TD3):
    config_class = TD3BCConfig

    def __init__(self, time_step_spec, action_spec, config):
        super().__init__(time_step_spec, action_spec, config)
        self.observation_mean = self.observation_scale = None
        if config.normalize_observations:
            spec = time_step_spec.observation
            if not isinstance(spec, tf.TensorSpec) or not spec.dtype.is_floating:
                raise ConfigError(f"td3_bc.normalize_observations standardises one float observation, not {spec}; "
                                  "set td3_bc.normalize_observations = false")
            # mean 0, scale 1 until fit_dataset: an online run without a dataset acts on raw observations
            self.observation_mean = tf.Variable(tf.zeros(spec.shape, spec.dtype), trainable=False,
                                                name="observation_mean")
            self.observation_scale = tf.Variable(tf.ones(spec.shape, spec.dtype), trainable=False,
                                                 name="observation_scale")

    def fit_dataset(self, observations: np.ndarray) -> None:
        """Take the normalisation's statistics from every observation of the dataset (``[N, ...]``)."""
        if self.observation_mean is None:
            return
        observations = np.asarray(observations, np.float64)
        self.observation_mean.assign(observations.mean(0).astype(self.observation_mean.dtype.as_numpy_dtype))
        self.observation_scale.assign((observations.std(0) + STD_EPSILON).astype(
            self.observation_scale.dtype.as_numpy_dtype))

    def normalised(self, observation):
        """``observation`` standardised by the dataset's statistics (unchanged without them)."""
        if self.observation_mean is None:
            return observation
        return (observation - self.observation_mean) / self.observation_scale

    def predict(self, time_step, state) -> PolicyStep:
        return super().predict(time_step._replace(observation=self.normalised(time_step.observation)), state)

    def rollout(self, time_step, state) -> PolicyStep:
        return super().rollout(time_step._replace(observation=self.normalised(time_step.observation)), state)

    def preprocess_experience(self, exp):
        batch = super().preprocess_experience(exp)
        return batch._replace(observation=self.normalised(batch.observation),
                              next_observation=self.normalised(batch.next_observation))

    def train_step(self, batch, state) -> PolicyStep:
        step = super().train_step(batch, state)
        info = step.info

        def regularised():  # only on the updates that train the actor, as TD3's own objective
            policy = self.scale.to_env(self._act(self.actor, self.encoded(batch)[0]))
            error = tf.reshape(tf.square(policy - tf.cast(batch.action, policy.dtype)), [tf.shape(policy)[0], -1])
            mask_sum = tf.maximum(tf.reduce_sum(info.mask), 1.0)
            scale = tf.stop_gradient(self.config.alpha * mask_sum
                                     / tf.maximum(tf.reduce_sum(tf.abs(info.q_policy) * info.mask), 1e-6))
            return scale * info.q_policy - tf.reduce_mean(error, -1)

        q_policy = tf.cond(info.trains_actor, regularised, lambda: info.q_policy)
        return step._replace(info=info._replace(q_policy=q_policy))
