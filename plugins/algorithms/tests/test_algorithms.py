import numpy as np
import pytest
import tensorflow as tf
from rlengine_algorithms.actor_critic import gae

from rlengine import StepType
from rlengine.run.engine import Engine

F, M, L = StepType.FIRST, StepType.MID, StepType.LAST


def test_gae_matches_a_hand_computation_with_termination_and_truncation():
    # one copy, rows 0..4: episode ends (terminated) at row 2, next starts at row 3
    step_type = tf.constant([[F], [M], [L], [F], [M]])
    reward = tf.constant([[0.0], [1.0], [2.0], [0.0], [3.0]])
    discount = tf.constant([[1.0], [1.0], [0.0], [1.0], [1.0]])
    value = tf.constant([[0.5], [1.0], [9.0], [2.0], [4.0]])
    gamma, lam = 0.9, 0.8
    adv, ret = gae(reward, discount, step_type, value, gamma, lam)
    d1 = 2.0 + 0 - 1.0  # row 1 -> 2: terminated, no bootstrap
    d0 = 1.0 + gamma * 1.0 - 0.5
    d3 = 3.0 + gamma * 4.0 - 2.0
    expected = [d0 + gamma * lam * d1, d1, None, d3]
    for t in (0, 1, 3):
        assert adv[t, 0].numpy() == pytest.approx(expected[t], rel=1e-6)
    np.testing.assert_allclose(ret[:, 0], adv[:, 0] + value[:-1, 0])


def test_gae_bootstraps_on_truncation():
    step_type = tf.constant([[M], [L]])
    adv, _ = gae(tf.constant([[0.0], [1.0]]), tf.constant([[1.0], [1.0]]), step_type,
                 tf.constant([[0.0], [10.0]]), 0.5, 1.0)
    assert adv[0, 0].numpy() == pytest.approx(1.0 + 0.5 * 10.0)


def _run(tmp_path, algorithm, env, steps, **sections):
    raw = {"train": {"algorithm": algorithm, "env": env, "num_envs": 4, "unroll_length": 8,
                     "num_env_steps": steps, "writers": [], "eval_interval": 2, "num_eval_episodes": 2,
                     "root_dir": str(tmp_path)}}
    raw.update(sections)
    return Engine(raw).train()


@pytest.mark.parametrize("algorithm", ["ac", "ppo"])
def test_discrete_smoke(tmp_path, algorithm):
    result = _run(tmp_path, algorithm, "CartPole-v1", 64)
    assert result.env_steps == 64 and result.eval_return is not None


def test_continuous_smoke(tmp_path):
    result = _run(tmp_path, "ppo", "Pendulum-v1", 64, ppo={"hidden_sizes": [16]})
    assert result.eval_return < 0


@pytest.mark.thorough  # the root suite leaves it out for time; this package's tox env runs it
def test_lstm_smoke_carries_state_through_the_specs(tmp_path):
    result = _run(tmp_path, "ppo", "rlengine/CartPoleNoVelocity-v1", 64,
                  ppo={"lstm_size": 8, "hidden_sizes": [16], "mini_batch_size": 2})
    assert result.env_steps == 64


def test_multidiscrete_actions_are_refused_with_the_algorithm_named(tmp_path):
    from rlengine import ConfigError

    with pytest.raises(ConfigError, match="algorithm 'ppo' supports Discrete actions"):
        import gymnasium

        gymnasium.register("rlengine-test/MultiDiscrete-v0", entry_point=_multi_discrete_env)
        _run(tmp_path, "ppo", "rlengine-test/MultiDiscrete-v0", 64)


def _multi_discrete_env():
    import gymnasium
    from gymnasium import spaces

    class Env(gymnasium.Env):
        observation_space = spaces.Box(-1, 1, (2,))
        action_space = spaces.MultiDiscrete([2, 3])

        def reset(self, seed=None, options=None):
            return np.zeros(2, np.float32), {}

        def step(self, action):
            return np.zeros(2, np.float32), 0.0, True, False, {}

    return Env()


@pytest.mark.parametrize("gradient", [0.1, -0.02, 3.0])
def test_ac_rmsprop_steps_as_sb3s_torch_rmsprop(gradient):
    from rlengine_algorithms.actor_critic import ActorCritic, ActorCriticConfig

    from rlengine import BoundedTensorSpec, TimeStep

    s = tf.TensorSpec
    spec = TimeStep(s([], tf.int32), s([], tf.float32), s([], tf.float32), s([4], tf.float32), s([2]),
                    s([], tf.int32))
    ac = ActorCritic(spec, BoundedTensorSpec([], tf.int32, 0, 1), ActorCriticConfig(optimizer="rmsprop",
                                                                                     learning_rate=0.01))
    variable = tf.Variable([1.0])
    ac.optimizer.apply_gradients([(tf.constant([gradient]), variable)])
    square_avg = (1 - 0.99) * gradient ** 2  # torch: v = alpha v + (1 - alpha) g^2, then g / (sqrt(v) + eps)
    expected = 1.0 - 0.01 * gradient / (np.sqrt(square_avg) + 1e-5)
    # within 1%: sqrt(v + 1e-10) stands for sqrt(v) + 1e-5; they part only for gradients near 1e-4 and below
    assert variable.numpy()[0] == pytest.approx(expected, rel=1e-2)
    assert abs(variable.numpy()[0] - 1.0) > 0.05  # RMSprop's first step is about lr * 10, not Adam's lr
