"""MAPPO's centralised critic (``central_critic = true``): the critic reads global_state and agent_id, the actor
the rest; without a global_state leaf the switch is refused with the fix."""

import numpy as np
import pytest
import tensorflow as tf
from rlengine_algorithms.ppo import PPO

from rlengine import BoundedTensorSpec, ConfigError, TimeStep

DISCRETE = BoundedTensorSpec([], tf.int32, 0, 4)


def make(observation_spec, **options):
    s = tf.TensorSpec
    spec = TimeStep(s([], tf.int32), s([], tf.float32), s([], tf.float32), observation_spec, DISCRETE, s([], tf.int32))
    return PPO(spec, DISCRETE, PPO.config_class(hidden_sizes=[8], central_critic=True, **options))


def rows(rng, **fixed):
    leaves = {"observation": rng.normal(size=[4, 5]), "agent_id": np.eye(4)[:, :2], "global_state": rng.normal(size=[4, 7])}
    return {key: tf.constant(fixed.get(key, value), tf.float32) for key, value in leaves.items()}


def test_the_actor_never_reads_the_state_and_the_critic_reads_only_it_and_the_agent_id():
    spec = {"observation": tf.TensorSpec([5]), "agent_id": tf.TensorSpec([2]), "global_state": tf.TensorSpec([7])}
    ppo = make(spec)
    rng = np.random.default_rng(0)
    base = rows(rng)
    other_state = rows(rng, observation=base["observation"].numpy(), agent_id=base["agent_id"].numpy())
    other_observation = rows(rng, global_state=base["global_state"].numpy(), agent_id=base["agent_id"].numpy())
    logits = [ppo._evaluate(o, ())[0].logits.numpy() for o in (base, other_state, other_observation)]
    values = [ppo._evaluate(o, ())[1].numpy() for o in (base, other_state, other_observation)]
    np.testing.assert_array_equal(logits[0], logits[1])  # a new state: the same policy
    assert not np.allclose(logits[0], logits[2])
    np.testing.assert_array_equal(values[0], values[2])  # new observations, same state and ids: the same values
    assert not np.allclose(values[0], values[1])


def test_an_observation_without_a_global_state_is_refused_with_the_fix():
    with pytest.raises(ConfigError, match=r"central_critic = true needs a dict observation with a 'global_state' "
                                          r"leaf.*\[pettingzoo\] global_state = true"):
        make({"observation": tf.TensorSpec([5])})
