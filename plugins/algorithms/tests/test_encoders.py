"""The first-party encoders, the algorithms' encoder options and action masking.

Algorithms are built directly, with this plugin's encoders in scope (see
conftest.py); a few short Engine runs go through the real registry.
"""

import numpy as np
import pytest
import tensorflow as tf
from rlengine_algorithms.actor_critic import ActorCriticConfig
from rlengine_algorithms.convnets import NatureTorso, Pixels, SmallConvTorso
from rlengine_algorithms.dqn import DQN, DQNConfig
from rlengine_algorithms.encoders import (
    Flatten,
    ImpalaCNN,
    MLPEncoder,
    MLPEncoderConfig,
    Multi,
    MultiConfig,
    NatureCNN,
    NatureCNNConfig,
)
from rlengine_algorithms.ppo import PPO, PPOConfig
from rlengine_algorithms.sac import SAC, SACConfig
from rlengine_algorithms.td3 import TD3, TD3Config

from rlengine import BoundedTensorSpec, ConfigError, Experience, TimeStep

S = tf.TensorSpec
DISCRETE4 = BoundedTensorSpec([], tf.int32, 0, 3)
BOX = BoundedTensorSpec([1], tf.float32, -1.0, 1.0)
MASKED_OBS = {"action_mask": S([4], tf.uint8), "obs": S([3], tf.float32)}


def time_step_spec(observation_spec, action_spec):
    return TimeStep(S([], tf.int32), S([], tf.float32), S([], tf.float32), observation_spec, action_spec,
                    S([], tf.int32))


def build(cls, observation_spec, action_spec, **options):
    return cls(time_step_spec(observation_spec, action_spec), action_spec, cls.config_class(**options))


def time_step(observation):
    batch = tf.shape(tf.nest.flatten(observation)[0])[0]
    zeros = tf.zeros([batch], tf.int32)
    return TimeStep(zeros, tf.zeros([batch]), tf.ones([batch]), observation, zeros, zeros)


def images(shape, dtype=tf.uint8, batch=2, seed=0):
    values = np.random.default_rng(seed).integers(0, 256, [batch, *shape])
    return tf.constant(values, dtype)


# -- encoders ---------------------------------------------------------------------


def test_flatten_concatenates_the_leaves_and_leaves_the_mask_out():
    spec = {"a": S([2, 3], tf.float32), "b": S([4], tf.uint8), "action_mask": S([5], tf.bool)}
    encoder = Flatten(spec)
    obs = {"a": tf.ones([2, 2, 3]), "b": tf.fill([2, 4], tf.constant(7, tf.uint8)), "action_mask": tf.ones([2, 5], bool)}
    out = encoder(obs)
    assert encoder.output_size == 10 and not encoder.variables
    np.testing.assert_array_equal(out, [[1.0] * 6 + [7.0] * 4] * 2)  # uint8 cast, not scaled


def test_mlp_builds_its_layers_at_once_and_ends_in_the_last_width():
    encoder = MLPEncoder({"x": S([3], tf.float32), "y": S([2, 2], tf.float32)},
                         MLPEncoderConfig(hidden_sizes=[8, 5], activation="tanh"))
    assert encoder.output_size == 5 and len(encoder.trainable_variables) == 4
    assert encoder({"x": tf.ones([7, 3]), "y": tf.ones([7, 2, 2])}).shape == [7, 5]
    assert MLPEncoder(S([3], tf.float32), MLPEncoderConfig(hidden_sizes=[])).output_size == 3


def test_nature_cnn_output_and_uint8_scaling():
    encoder = NatureCNN(S([84, 84, 4], tf.uint8), NatureCNNConfig(features=32))
    assert encoder.output_size == 32 and len(encoder.trainable_variables) == 8  # 3 convs and the dense layer
    out = encoder(tf.fill([3, 84, 84, 4], tf.constant(255, tf.uint8)))
    assert out.shape == [3, 32] and out.dtype == tf.float32
    np.testing.assert_allclose(out, encoder.torso(tf.ones([3, 84, 84, 4])), rtol=1e-5)  # 255 -> 1.0
    assert Pixels(S([8, 8, 1], tf.uint8), scale_uint8=False)(tf.fill([1, 8, 8, 1], tf.constant(255, tf.uint8)))[0, 0, 0, 0] == 255
    assert Pixels(S([8, 8, 1], tf.float32), scale_uint8=True)(tf.fill([1, 8, 8, 1], 255.0))[0, 0, 0, 0] == 255


def test_channels_first_images_are_transposed_to_channels_last():
    last = NatureCNN(S([40, 44, 3], tf.uint8))
    first = NatureCNN(S([3, 40, 44], tf.uint8))
    assert first.pixels.channels_first and first.pixels.hwc == (40, 44, 3)
    for a, b in zip(first.variables, last.variables):
        a.assign(b)
    image = images([40, 44, 3])
    np.testing.assert_allclose(first(tf.transpose(image, [0, 3, 1, 2])), last(image), rtol=1e-5)
    assert not Pixels(S([84, 84, 4], tf.uint8), True).channels_first


def test_nature_cnn_refuses_an_image_too_small_for_its_kernels():
    with pytest.raises(ConfigError, match=r"at least 36x36.*\[20, 20, 3\].*impala_cnn"):
        NatureCNN(S([20, 20, 3], tf.uint8))
    with pytest.raises(ConfigError, match="one image observation.*multi"):
        NatureCNN({"a": S([40, 40, 3], tf.uint8), "b": S([2], tf.float32)})


@pytest.mark.parametrize("shape", [[64, 64, 3], [9, 7, 1]])
def test_impala_cnn_works_on_any_image_size(shape):
    encoder = ImpalaCNN(S(shape, tf.uint8))
    assert encoder.output_size == 256 and encoder(images(shape)).shape == [2, 256]
    assert len(encoder.trainable_variables) == 2 * (1 + 4) * 3 + 2  # per stack: a conv, two blocks of two convs


def test_multi_encodes_every_leaf_of_a_dict_and_skips_the_mask():
    spec = {"small": S([12, 12, 3], tf.uint8), "large": S([3, 40, 40], tf.uint8), "vec": S([5], tf.float32),
            "action_mask": S([2], tf.uint8)}
    encoder = Multi(spec, MultiConfig(features=16, mlp_sizes=[8]))
    large, small, vec = encoder.parts  # nest order: sorted keys
    assert isinstance(large.torso, NatureTorso) and isinstance(small.torso, SmallConvTorso)
    assert encoder.output_size == 16 + 16 + 8
    obs = {"small": images([12, 12, 3]), "large": images([3, 40, 40]), "vec": tf.ones([2, 5]),
           "action_mask": tf.ones([2, 2], tf.uint8)}
    assert encoder(obs).shape == [2, 40]
    impala = Multi(spec, MultiConfig(cnn="impala_cnn", mlp_sizes=[]))
    assert impala.output_size == 256 + 256 + 5


def test_encoder_copies_are_frozen_equal_values(first_party_encoders):
    encoder = first_party_encoders.make("mlp", S([3], tf.float32))
    copy = first_party_encoders.copy(encoder, "target")
    assert not copy.trainable_variables and len(copy.variables) == len(encoder.variables)
    for a, b in zip(copy.variables, encoder.variables):
        np.testing.assert_array_equal(a, b)


# -- the algorithms' encoders ---------------------------------------------------------


def test_ppo_shares_one_encoder_by_default_and_splits_it_on_request(encoder_configs):
    encoder_configs["mlp"] = MLPEncoderConfig(hidden_sizes=[6])
    shared = build(PPO, S([3], tf.float32), DISCRETE4, encoder="mlp", hidden_sizes=[])
    assert shared.torso.critic_encoder is None
    split = build(PPO, S([3], tf.float32), DISCRETE4, encoder="mlp", share_encoder=False, hidden_sizes=[])
    assert split.torso.critic_encoder is not None and split.torso.critic_encoder is not split.torso.encoder
    for algorithm in (shared, split):
        assert algorithm.rollout(time_step(tf.ones([2, 3])), ()).info.value == ()  # taken after the unroll
        assert algorithm._values(tf.ones([5, 2, 3])).shape == [5, 2]
    assert len(split.trainable_variables) == len(shared.trainable_variables) + 2  # the critic's own dense layer
    with pytest.raises(ConfigError, match="share_encoder = false needs lstm_size = 0"):
        build(PPO, S([3], tf.float32), DISCRETE4, encoder="mlp", share_encoder=False, lstm_size=4)


@pytest.mark.parametrize("share_encoder", [True, False])
def test_ppo_values_after_the_unroll_are_the_critics_at_each_step(encoder_configs, share_encoder):
    # acting runs the actor alone; preprocess_experience takes the values of all T + 1 rows in one pass
    encoder_configs["mlp"] = MLPEncoderConfig(hidden_sizes=[6])
    algorithm = build(PPO, S([3], tf.float32), DISCRETE4, encoder="mlp", share_encoder=share_encoder)
    observation = tf.random.normal([4, 2, 3])
    algorithm.rollout(time_step(observation[0]), ())
    per_step = [algorithm._evaluate(observation[t], ())[1] for t in range(4)]
    np.testing.assert_allclose(algorithm._values(observation), tf.stack(per_step), rtol=1e-5, atol=1e-6)


def test_ppo_with_an_lstm_takes_its_values_while_acting():
    algorithm = build(PPO, S([3], tf.float32), DISCRETE4, lstm_size=4)
    state = tf.nest.map_structure(lambda s: tf.zeros([2, *s.shape]), algorithm.state_spec)
    assert algorithm.rollout(time_step(tf.ones([2, 3])), state).info.value.shape == [2]


def sac_update_gradients(algorithm, obs_dim=3):
    obs = tf.random.normal([4, obs_dim])
    from rlengine_algorithms.critics import Transition

    batch = Transition(obs, tf.zeros([4, 1]), tf.ones([4]), tf.ones([4]), obs, tf.ones([4]))
    with tf.GradientTape(persistent=True) as tape:
        info = algorithm.train_step(batch, ()).info
    return algorithm.train_complete(tape, info)[1]


@pytest.mark.parametrize("cls", [SAC, TD3])
def test_a_shared_off_policy_encoder_is_trained_by_the_critic_only(cls):
    algorithm = build(cls, S([3], tf.float32), BOX, encoder="mlp", share_encoder=True, hidden_sizes=[8])
    encoder = {v.ref() for v in algorithm.critic_encoder.trainable_variables}
    actor_group, critic_group = (algorithm.optimizers[0][1], algorithm.optimizers[1][1])
    assert algorithm.actor_encoder is algorithm.critic_encoder
    assert not encoder & {v.ref() for v in actor_group} and encoder <= {v.ref() for v in critic_group}
    grads = [g for g, v in sac_update_gradients(algorithm) if v.ref() in encoder]
    assert grads and all(g is not None and np.any(g.numpy() != 0) for g in grads)
    # the target encoder is a frozen copy, moved with the target critic
    target = algorithm.target_critic_encoder
    assert not target.trainable_variables and {v.ref() for v in target.variables} <= {
        v.ref() for v in algorithm.targets[-1][0]}


def test_unshared_td3_has_four_encoders_each_in_its_own_groups():
    td3 = build(TD3, S([3], tf.float32), BOX, encoder="mlp", hidden_sizes=[8])
    encoders = [td3.actor_encoder, td3.critic_encoder, td3.target_actor_encoder, td3.target_critic_encoder]
    assert len({id(e) for e in encoders}) == 4
    actor_vars, critic_vars = ({v.ref() for v in group} for _, group in td3.optimizers)
    assert {v.ref() for v in td3.actor_encoder.trainable_variables} <= actor_vars
    assert {v.ref() for v in td3.critic_encoder.trainable_variables} <= critic_vars
    assert all(v.ref() in {t.ref() for t in td3.targets[0][0]} for v in td3.target_actor_encoder.variables)


def test_dqn_target_network_has_its_own_encoder_copy():
    dqn = build(DQN, S([3], tf.float32), DISCRETE4, encoder="mlp", hidden_sizes=[8])
    assert dqn.target_encoder is not dqn.encoder and not dqn.target_encoder.trainable_variables
    assert {v.ref() for v in dqn.encoder.trainable_variables} <= {v.ref() for v in dqn.trained}
    recurrent = build(DQN, S([3], tf.float32), DISCRETE4, encoder="mlp", hidden_sizes=[8], lstm_size=4)
    assert recurrent.lstm.kernel.shape[0] == 64  # the LSTM reads the encoder's features


# -- action masking ------------------------------------------------------------------------


def masked_observation(batch, legal=(1, 3)):
    mask = np.zeros([batch, 4], np.uint8)
    mask[:, list(legal)] = 1
    return {"action_mask": tf.constant(mask), "obs": tf.random.normal([batch, 3])}


def test_ppo_never_samples_or_picks_a_masked_action():
    ppo = build(PPO, MASKED_OBS, DISCRETE4, hidden_sizes=[8])
    ppo.head.logits(tf.zeros([1, 8]))
    ppo.head.logits.b.assign([0.0, 0.0, 50.0, 0.0])  # the illegal action 2 would win everywhere
    ts = time_step(masked_observation(2000))
    sampled = ppo.rollout(ts, ()).action.numpy()
    assert set(np.unique(sampled)) == {1, 3}
    assert set(np.unique(ppo.predict(ts, ()).action.numpy())) <= {1, 3}
    action = tf.constant(sampled)
    exp = Experience(ts.step_type, ts.reward, ts.discount, ts.observation, action, ts.env_id, action, (), ())
    train = ppo.train_step(exp, ()).info  # the train-time distribution is masked too
    assert np.all(np.isfinite(train.dist.log_prob(train.action))) and np.all(np.isfinite(train.dist.entropy()))
    np.testing.assert_allclose(train.dist.probs_parameter()[:, 2], 0.0)


def test_dqn_greedy_and_random_actions_are_legal_and_the_bootstrap_uses_the_next_mask():
    dqn = build(DQN, MASKED_OBS, DISCRETE4, hidden_sizes=[], epsilon_start=1.0, gamma=1.0)
    for network in (dqn.q_network, dqn.target_network):
        network.weights[0].assign(tf.zeros_like(network.weights[0]))
        network.biases[0].assign([[[1.0, 2.0, 9.0, 3.0]]])  # the illegal action 2 has the highest Q
    ts = time_step(masked_observation(4000))
    assert set(np.unique(dqn.predict(ts, ()).action.numpy())) == {3}
    dqn.progress.assign(0.0)  # epsilon 1: every action random, uniform among the legal ones
    counts = np.bincount(dqn.rollout(ts, ()).action.numpy(), minlength=4)
    assert counts[0] == counts[2] == 0 and abs(counts[1] - counts[3]) < 400
    from rlengine_algorithms.critics import Transition

    obs, next_obs = masked_observation(1), masked_observation(1, legal=(0,))
    batch = Transition(obs, tf.constant([1]), tf.zeros([1]), tf.ones([1]), next_obs, tf.ones([1]))
    assert dqn._target(batch).numpy() == pytest.approx([1.0])  # Q(s', 0): the only legal next action


def test_a_mask_of_the_wrong_width_or_on_continuous_actions_is_refused():
    wrong = {"action_mask": S([3], tf.uint8), "obs": S([3], tf.float32)}
    for cls in (PPO, DQN):
        with pytest.raises(ConfigError, match="'action_mask' has 3 entries but the action space has 4 actions"):
            build(cls, wrong, DISCRETE4, hidden_sizes=[8])
    for cls in (SAC, TD3, PPO):
        with pytest.raises(ConfigError, match="continuous actions, which an observation 'action_mask' cannot mask"):
            build(cls, MASKED_OBS, BOX, hidden_sizes=[8])


def test_config_defaults():
    assert ActorCriticConfig().encoder == "flatten" and PPOConfig().share_encoder
    assert SACConfig().encoder == "flatten" and not SACConfig().share_encoder and not TD3Config().share_encoder
    assert DQNConfig().encoder == "flatten"


# -- through the engine (short runs) --------------------------------------------------


def _run(tmp_path, algorithm, env, options, **sections):
    from rlengine.run.engine import Engine

    raw = {"train": {"algorithm": algorithm, "env": env, "num_envs": 2, "unroll_length": 8, "num_env_steps": 64,
                     "writers": [], "eval_interval": 4, "num_eval_episodes": 1, "root_dir": str(tmp_path)},
           algorithm: options, "mlp": {"hidden_sizes": [16]}, **sections}
    return Engine(raw).train()


OFF_POLICY = {"hidden_sizes": [16], "mini_batch_size": 8, "initial_collect_steps": 16, "num_updates_per_iteration": 2}


@pytest.mark.parametrize("algorithm,env,options", [
    ("ppo", "CartPole-v1", {"encoder": "mlp", "hidden_sizes": [], "mini_batch_size": 8}),
    ("dqn", "CartPole-v1", {"encoder": "mlp", **OFF_POLICY}),
    ("sac", "Pendulum-v1", {"encoder": "mlp", "share_encoder": True, **OFF_POLICY}),
])
def test_engine_smoke_with_the_mlp_encoder(tmp_path, algorithm, env, options):
    result = _run(tmp_path, algorithm, env, options)
    assert result.env_steps == 64 and np.isfinite(result.eval_return)


def test_an_unknown_encoder_name_is_refused_by_the_registry(tmp_path):
    from rlengine import RLEngineError

    with pytest.raises(RLEngineError, match="nature_cn"):
        _run(tmp_path, "ppo", "CartPole-v1", {"encoder": "nature_cn"})
