"""Conservative Q-learning for Discrete actions (``discrete_cql``, Kumar, Zhou, Tucker & Levine 2020, the
CQL(H) variant on DQN, the paper's choice for its Atari datasets).

A Q network trained from a dataset by its TD error alone rates the actions the dataset never took as it
pleases, and the greedy policy picks them. With few actions the soft maximum of the paper's CQL(H) is exact,
no sampling needed, so each update adds to DQN's loss::

    alpha * mean (logsumexp_a Q(s, a) - Q(s, a_data))

which pushes every action's value down and the dataset's action back up (illegal actions of an
``action_mask`` are left out of the soft maximum, as they are of the greedy choice). Everything else is
the algorithms plugin's DQN: its encoders (pixels too), target network and update; its defaults
changed for data: one-step targets and uniform sampling. Online (``--init-from``) it explores as DQN does.
"""

from __future__ import annotations

import attrs
import tensorflow as tf
from rlengine_algorithms.critics import weighted_mean
from rlengine_algorithms.dqn import DQN, DQNConfig, DQNInfo

from rlengine import ConfigError

_v = attrs.validators


@attrs.define(kw_only=True)
class DiscreteCQLConfig(DQNConfig):
    """Options of ``discrete_cql`` (TOML section ``[discrete_cql]``): DQN's, with defaults for a dataset,
    plus the conservative term's weight."""

    #: weight of the conservative term (logsumexp of Q over the actions - Q at the dataset's action);
    #: 0: DQN on the dataset
    alpha: float = attrs.field(default=1.0, validator=_v.ge(0))
    mini_batch_length: int = attrs.field(default=2, validator=_v.ge(2))  # one-step targets: the data's policy is not ours
    prioritized_replay: bool = False  # uniform over the dataset, as the paper


class DiscreteCQL(DQN):
    config_class = DiscreteCQLConfig

    def __init__(self, time_step_spec, action_spec, config):
        if not action_spec.dtype.is_integer or action_spec.shape.rank != 0:
            raise ConfigError("algorithm 'discrete_cql' supports Discrete actions only; for Box (continuous) "
                              "actions use 'cql'")
        if config.lstm_size:
            raise ConfigError(f"discrete_cql.lstm_size = {config.lstm_size}: discrete_cql has no recurrent form; "
                              "leave it 0")
        super().__init__(time_step_spec, action_spec, config)

    def regularizer(self, info: DQNInfo, weight=None) -> tuple:
        gap = conservative_gap(info.q_all, info.q)
        conservative = self.config.alpha * weighted_mean(gap, info.mask, weight)
        return {"conservative": conservative}, {"conservative_gap": weighted_mean(gap, info.mask)}


def conservative_gap(q_all: tf.Tensor, q_data: tf.Tensor) -> tf.Tensor:
    """``[B]``: ``logsumexp_a Q(s, a) - Q(s, a_data)`` of each row (``q_all`` ``[B, A]``, ``q_data`` ``[B]``)."""
    return tf.reduce_logsumexp(q_all, axis=-1) - q_data
