"""Unit tests of SAC, TD3 and DQN on hand-built replayed batches.

They drive the algorithm the way the core's replay learner does:
``preprocess_experience`` on time-major ``[T, B]`` sequences, ``train_step``
under a persistent tape, ``train_complete``, then ``apply_gradients`` and
``after_update``, both eagerly and inside ``tf.function(autograph=False)``.
"""

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_probability as tfp
from rlengine_algorithms.critics import to_transitions
from rlengine_algorithms.dqn import DQN, DQNConfig
from rlengine_algorithms.exploration import OrnsteinUhlenbeckNoise, SDEState, StateDependentNoise
from rlengine_algorithms.sac import SAC, SACConfig, squashed_sample
from rlengine_algorithms.td3 import TD3, TD3Config

from rlengine import BoundedTensorSpec, ConfigError, Experience, SquashedNormal, StepType, TimeStep, hookimpl
from rlengine.api import seeding

F, M, L = StepType.FIRST, StepType.MID, StepType.LAST
BOX = BoundedTensorSpec([1], tf.float32, -2.0, 2.0)
DISCRETE = BoundedTensorSpec([], tf.int32, 0, 1)


def time_step_spec(obs_dim, action_spec):
    s = tf.TensorSpec
    return TimeStep(s([], tf.int32), s([], tf.float32), s([], tf.float32), s([obs_dim], tf.float32),
                    action_spec, s([], tf.int32))


def make(cls, action_spec=BOX, obs_dim=3, **options):
    options.setdefault("hidden_sizes", [16, 16])
    return cls(time_step_spec(obs_dim, action_spec), action_spec, cls.config_class(**options))


def experience(step_type, reward=None, discount=None, obs=None, action=None, obs_dim=3, action_spec=BOX):
    """A ``[T, B]`` batch; unspecified fields are ones (rewards, discounts) or seeded noise."""
    step_type = tf.constant(step_type, tf.int32)
    t, b = step_type.shape
    rng = np.random.default_rng(0)
    reward = tf.ones([t, b]) if reward is None else tf.constant(reward, tf.float32)
    discount = tf.ones([t, b]) if discount is None else tf.constant(discount, tf.float32)
    obs = tf.constant(rng.normal(size=(t, b, obs_dim)), tf.float32) if obs is None else tf.constant(obs, tf.float32)
    if action is None:
        action = (rng.integers(0, 2, (t, b)) if action_spec.dtype.is_integer
                  else rng.uniform(-2, 2, (t, b, *action_spec.shape)))
    action = tf.constant(action, action_spec.dtype)
    return Experience(step_type, reward, discount, obs, tf.zeros_like(action), tf.zeros([t, b], tf.int32),
                      action, (), ())


def losses_and_grads(algorithm, exp, weight=None):
    batch = algorithm.preprocess_experience(exp)
    with tf.GradientTape(persistent=True) as tape:
        info = algorithm.train_step(batch, ()).info
    return algorithm.train_complete(tape, info, weight)


def update(algorithm, exp, weight=None):
    loss_info, grads_and_vars = losses_and_grads(algorithm, exp, weight)
    algorithm.apply_gradients(grads_and_vars)
    algorithm.after_update()
    return loss_info


def values(variables):
    return [v.numpy().copy() for v in variables]


def moved(before, variables):
    return any(not np.array_equal(b, v.numpy()) for b, v in zip(before, variables))


# -- n-step transitions ----------------------------------------------------------


def test_transitions_stop_at_termination_and_bootstrap_after_truncation():
    # rows are time, columns copies. Copy 0 terminates at row 3 (discount 0);
    # copy 1 is truncated at row 1 (LAST, discount 1) and restarts; copy 2 runs
    # on; copy 3 starts at a LAST row, so it holds no transition at all.
    exp = experience([[F, M, M, L], [M, L, M, F], [M, F, M, M], [L, M, M, M]],
                     reward=[[10 * t + b + 1 for b in range(4)] for t in range(4)],
                     discount=[[1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1], [0, 1, 1, 1]])
    t = to_transitions(exp, gamma=0.5)
    reward = exp.reward.numpy()
    # copy 0: rows 1..3 with gamma, terminated at row 3: no bootstrap
    assert t.reward[0].numpy() == pytest.approx(reward[1, 0] + 0.5 * reward[2, 0] + 0.25 * reward[3, 0])
    assert t.discount[0].numpy() == 0.0
    # copy 1: LAST (truncated) at row 1: one reward, bootstrap from row 1 with gamma
    assert t.reward[1].numpy() == pytest.approx(reward[1, 1])
    assert t.discount[1].numpy() == pytest.approx(0.5)
    np.testing.assert_array_equal(t.next_observation[1], exp.observation[1, 1])
    # copy 2: three steps, bootstrap from row 3
    assert t.reward[2].numpy() == pytest.approx(reward[1, 2] + 0.5 * reward[2, 2] + 0.25 * reward[3, 2])
    assert t.discount[2].numpy() == pytest.approx(0.125)
    np.testing.assert_array_equal(t.next_observation[2], exp.observation[3, 2])
    np.testing.assert_array_equal(t.mask, [1, 1, 1, 0])
    np.testing.assert_array_equal(t.observation, exp.observation[0])
    np.testing.assert_array_equal(t.action, exp.action[0])


def test_one_step_transitions_take_row_one():
    exp = experience([[M, L, F], [L, F, M]], discount=[[1, 1, 1], [0, 1, 1]])
    t = to_transitions(exp, gamma=0.9)
    np.testing.assert_array_equal(t.mask, [1, 0, 1])  # copy 1 starts at LAST: masked
    np.testing.assert_allclose(t.discount.numpy()[[0, 2]], [0.0, 0.9])  # copy 0 terminated
    np.testing.assert_array_equal(t.next_observation, exp.observation[1])


# -- every algorithm -----------------------------------------------------------------

CASES = [(SAC, BOX), (TD3, BOX), (DQN, DISCRETE)]


@pytest.mark.parametrize("cls,spec", CASES)
def test_rollout_and_predict_match_the_action_spec(cls, spec):
    algorithm = make(cls, spec)
    ts = TimeStep(tf.zeros([5], tf.int32), tf.zeros([5]), tf.ones([5]), tf.random.normal([5, 3]),
                  tf.zeros([5, *spec.shape], spec.dtype), tf.zeros([5], tf.int32))
    for step in (algorithm.rollout(ts, ()), algorithm.predict(ts, ())):
        assert step.action.dtype == spec.dtype and step.action.shape == [5, *spec.shape]
        assert np.all(step.action.numpy() >= spec.minimum) and np.all(step.action.numpy() <= spec.maximum)


@pytest.mark.parametrize("cls,spec", CASES)
@pytest.mark.parametrize("graph", [False, True])
def test_an_update_covers_every_variable_and_leaves_targets_to_after_update(cls, spec, graph):
    algorithm = make(cls, spec, prioritized_replay=True)
    algorithm.build()
    exp = experience([[M, M, L, M], [M, L, F, M]], action_spec=spec)
    targets = [v for t, _ in algorithm.targets for v in t]
    before = values(algorithm.variables)
    loss_info, grads_and_vars = losses_and_grads(algorithm, exp, tf.ones([4]))
    assert not moved(before, algorithm.variables)  # the dummy step's contract: no side effects
    assert {v.ref() for _, v in grads_and_vars} == {v.ref() for v in algorithm.trainable_variables}
    assert not {v.ref() for v in targets} & {v.ref() for v in algorithm.trainable_variables}
    assert np.isfinite(loss_info.loss.numpy()) and all(np.isfinite(x.numpy()) for x in loss_info.extra.values())
    assert loss_info.priority.shape == [4] and loss_info.priority[2].numpy() == 0.0  # row 0 LAST: masked

    step = tf.function(update, autograph=False) if graph else update
    step(algorithm, exp, tf.ones([4]))
    assert algorithm.num_updates.numpy() == 1
    assert moved(before, algorithm.trainable_variables)


@pytest.mark.parametrize("cls,spec", CASES)
def test_priorities_only_when_prioritized(cls, spec):
    algorithm = make(cls, spec, prioritized_replay=False)
    loss_info, _ = losses_and_grads(algorithm, experience([[M, M], [M, M]], action_spec=spec))
    assert loss_info.priority == ()


def test_sac_targets_follow_with_polyak_tau():
    sac = make(SAC, tau=0.25)
    sac.build()
    online, target = sac.critic.variables, sac.target_critic.variables
    np.testing.assert_array_equal(values(online)[0], values(target)[0])  # targets start as copies
    old_target = values(target)
    update(sac, experience([[M, M], [M, M]]))
    for t, o, new in zip(old_target, values(online), values(target)):
        np.testing.assert_allclose(new, t + 0.25 * (o - t), rtol=1e-5, atol=1e-6)
    assert moved(old_target, target)


@pytest.mark.parametrize("target_entropy,direction", [(-20.0, -1), (20.0, 1)])
def test_sac_alpha_moves_toward_the_target_entropy(target_entropy, direction):
    sac = make(SAC, target_entropy=target_entropy)
    sac.build()
    before = sac.log_alpha.numpy()
    update(sac, experience([[M, M, M], [M, M, M]]))
    assert np.sign(sac.log_alpha.numpy() - before) == direction


def test_sac_with_learn_alpha_false_keeps_its_temperature_and_trains_the_rest():
    sac = make(SAC, target_entropy=20.0, initial_alpha=0.1, learn_alpha=False)
    sac.build()
    critic = values(sac.critic.variables)
    for _ in range(3):
        update(sac, experience([[M, M, M], [M, M, M]]))
    assert sac.log_alpha.numpy() == np.float32(np.log(0.1))  # exactly: SB3's ent_coef given as a number
    assert moved(critic, sac.critic.variables)


def test_squashed_sample_log_prob_matches_squashed_normal():
    tf.random.set_seed(1)
    loc, log_std = tf.constant([[0.3, -1.0], [2.0, 0.1]]), tf.constant([[-0.5, 0.2], [0.0, -1.0]])
    action, log_prob = squashed_sample(loc, log_std)
    expected = SquashedNormal(loc, tf.exp(log_std), -1.0, 1.0).log_prob(action)
    np.testing.assert_allclose(log_prob, expected, rtol=1e-4, atol=1e-4)


def test_td3_applies_actor_gradients_and_moves_targets_every_second_update():
    td3 = make(TD3)
    td3.build()
    step = tf.function(update, autograph=False)
    exp = experience([[M, M], [M, M]])
    target_vars = td3.target_actor.variables + td3.target_critic.variables
    for k in range(1, 5):
        actor, critic, targets = values(td3.actor.variables), values(td3.critic.variables), values(target_vars)
        step(td3, exp)
        assert moved(critic, td3.critic.variables)
        assert moved(actor, td3.actor.variables) == (k % 2 == 0)
        assert moved(targets, target_vars) == (k % 2 == 0)


def test_td3_skips_the_actor_passes_between_its_updates_and_reports_its_latest_loss():
    td3 = make(TD3)  # policy_delay 2: updates 2, 4, ... train the actor
    td3.build()
    exp = experience([[M, M], [M, M]])
    actor_vars = set(v.ref() for v in td3.optimizers[0][1])
    reported = []
    for k in range(1, 5):
        loss_info, grads_and_vars = losses_and_grads(td3, exp)
        actor_grads = [g for g, v in grads_and_vars if v.ref() in actor_vars]
        assert any(np.any(g.numpy() != 0) for g in actor_grads) == (k % 2 == 0)
        td3.apply_gradients(grads_and_vars)
        td3.after_update()
        reported.append(float(loss_info.extra["actor"]))
    assert reported[0] == 0.0 and reported[1] != 0.0  # nothing before the actor's first update
    assert reported[2] == reported[1] and reported[3] != reported[2]  # the latest update's loss in between


def test_dqn_epsilon_decays_linearly_over_the_exploration_fraction():
    dqn = make(DQN, DISCRETE, exploration_fraction=0.2, epsilon_start=1.0, epsilon_end=0.05)
    for progress, expected in [(0.0, 1.0), (0.1, 0.525), (0.2, 0.05), (0.9, 0.05)]:
        dqn.progress.assign(progress)
        assert dqn.epsilon().numpy() == pytest.approx(expected)
    ts = TimeStep(tf.zeros([500], tf.int32), tf.zeros([500]), tf.ones([500]), tf.random.normal([500, 3]),
                  tf.zeros([500], tf.int32), tf.zeros([500], tf.int32))
    greedy = dqn.predict(ts, ()).action.numpy()
    assert np.mean(dqn.rollout(ts, ()).action.numpy() != greedy) < 0.1  # epsilon 0.05: ~2.5% differ
    dqn.progress.assign(0.0)
    assert np.mean(dqn.rollout(ts, ()).action.numpy() != greedy) > 0.3  # all random: ~50% differ


def test_dqn_double_q_target_on_a_hand_example():
    # linear Q networks (no hidden layer) on 2-d observations: Q(s) = s @ w
    dqn = make(DQN, DISCRETE, obs_dim=2, hidden_sizes=[], gamma=0.5)
    dqn.q_network.weights[0].assign([[[1.0, 0.0], [0.0, 2.0]]])  # online prefers action 1 at s' = (1, 1)
    dqn.target_network.weights[0].assign([[[10.0, 0.0], [0.0, 3.0]]])  # target: Q(s', 0) = 10, Q(s', 1) = 3
    exp = experience([[M], [M]], reward=[[0.0], [1.0]], obs=[[[0.0, 0.0]], [[1.0, 1.0]]], action=[[0], [0]],
                     obs_dim=2, action_spec=DISCRETE)
    batch = dqn.preprocess_experience(exp)
    assert dqn._target(batch).numpy() == pytest.approx([1.0 + 0.5 * 3.0])  # not max = 10
    dqn_plain = make(DQN, DISCRETE, obs_dim=2, hidden_sizes=[], gamma=0.5, double_q=False)
    dqn_plain.target_network.weights[0].assign(dqn.target_network.weights[0])
    assert dqn_plain._target(batch).numpy() == pytest.approx([1.0 + 0.5 * 10.0])


def test_dqn_hard_target_update_every_period():
    dqn = make(DQN, DISCRETE, target_update_period=3)
    dqn.build()
    exp = experience([[M, M], [M, M]], action_spec=DISCRETE)
    step = tf.function(update, autograph=False)
    for k in range(1, 7):
        step(dqn, exp)
        same = all(np.array_equal(a, b) for a, b in zip(values(dqn.q_network.variables),
                                                        values(dqn.target_network.variables)))
        assert same == (k % 3 == 0)


def test_dqn_n_step_uses_longer_sequences():
    dqn = make(DQN, DISCRETE, mini_batch_length=4, gamma=0.5)
    assert dqn.mini_batch_length == 4 and dqn.off_policy
    loss_info, _ = losses_and_grads(dqn, experience([[M, M], [M, L], [M, F], [M, M]], action_spec=DISCRETE))
    assert np.isfinite(loss_info.loss.numpy())


# -- refusals ----------------------------------------------------------------------


@pytest.mark.parametrize("cls,name", [(SAC, "sac"), (TD3, "td3")])
def test_continuous_algorithms_refuse_discrete_actions(cls, name):
    with pytest.raises(ConfigError, match=f"'{name}'.*'dqn'"):
        make(cls, DISCRETE)


def test_dqn_refuses_box_actions():
    with pytest.raises(ConfigError, match="'dqn'.*'sac' or 'td3'"):
        make(DQN, BOX)


def test_unbounded_box_actions_are_refused():
    with pytest.raises(ConfigError, match="'sac' needs finite Box action bounds"):
        make(SAC, BoundedTensorSpec([1], tf.float32, -np.inf, np.inf))


def test_configs_reach_the_replay_attributes():
    sac = make(SAC, mini_batch_size=32, initial_collect_steps=50, replay_capacity=500, prioritized_replay=True)
    assert (sac.mini_batch_size, sac.initial_collect_steps, sac.replay_capacity) == (32, 50, 500)
    assert sac.prioritized_replay and sac.off_policy and sac.mini_batch_length == 2
    assert SACConfig().mini_batch_size == 256 and TD3Config().policy_delay == 2
    assert (DQNConfig().mini_batch_size, DQNConfig().mini_batch_length, DQNConfig().prioritized_replay) == (64, 4, True)


# -- through the engine (short runs) ----------------------------------------------

SMALL = {"hidden_sizes": [16], "mini_batch_size": 16, "initial_collect_steps": 40, "num_updates_per_iteration": 2}


class UpdateCounter:
    """Reads the algorithm's applied and the learner's skipped updates when the run ends."""

    @hookimpl
    def rlengine_train_end(self, run, error):
        self.applied = int(run.algorithm.num_updates.numpy())
        self.skipped = int(run.internals.learner.skipped_updates.numpy())


@pytest.mark.parametrize("algorithm,env,options", [
    ("sac", "Pendulum-v1", {}),
    pytest.param("td3", "Pendulum-v1", {"prioritized_replay": True}, marks=pytest.mark.thorough),  # time
    ("dqn", "CartPole-v1", {"mini_batch_length": 3, "prioritized_replay": True, "target_update_period": 4}),
])
def test_engine_smoke(tmp_path, algorithm, env, options):
    from rlengine.run.engine import Engine

    raw = {"train": {"algorithm": algorithm, "env": env, "num_envs": 2, "unroll_length": 4, "num_env_steps": 200,
                     "writers": [], "eval_interval": 25, "num_eval_episodes": 1, "root_dir": str(tmp_path)},
           algorithm: {**SMALL, **options}}
    counter = UpdateCounter()
    result = Engine(raw, extra_plugins=[("counter", counter)]).train()
    assert result.env_steps == 200 and np.isfinite(result.eval_return)
    assert counter.applied > 0 and counter.skipped == 0  # learned from replay, every update finite
    assert np.isfinite(Engine(raw).evaluate(num_episodes=1)["eval/average_return"])  # the checkpoint restores


# -- recurrent DQN -------------------------------------------------------------------


def recurrent_dqn(**options):
    options = {"lstm_size": 8, "hidden_sizes": [16], "obs_dim": 3, **options}
    return make(DQN, DISCRETE, **options)


def unroll(algorithm, exp, state=None):
    """What the core's learner does for recurrent algorithms: train_step over time, resetting at FIRST."""
    batch = exp.step_type.shape[1]
    initial = algorithm.initial_state(batch)
    state = initial if state is None else state
    infos = []
    for t in range(exp.step_type.shape[0]):
        step = tf.nest.map_structure(lambda x: x[t], exp)
        first = tf.equal(step.step_type, F)[:, None]
        state = tf.nest.map_structure(lambda s, z: tf.where(first, z, s), state, initial)
        out = algorithm.train_step(step, state)
        infos.append(out.info)
        state = out.state
    return tf.nest.map_structure(lambda *xs: tf.stack(xs), *infos), state


def recurrent_update(algorithm, exp, weight=None):
    with tf.GradientTape(persistent=True) as tape:
        info, _ = unroll(algorithm, algorithm.preprocess_experience(exp))
    loss_info, grads_and_vars = algorithm.train_complete(tape, info, weight)
    algorithm.apply_gradients(grads_and_vars)
    algorithm.after_update()
    return loss_info


def test_recurrent_dqn_config_and_shapes():
    assert DQNConfig().lstm_size == 0 and DQNConfig(lstm_size=4).mini_batch_length == 8
    assert not make(DQN, DISCRETE).needs_time_dimension and make(DQN, DISCRETE).state_spec == ()
    dqn = recurrent_dqn(use_rollout_state=False)
    assert dqn.needs_time_dimension and not dqn.use_rollout_state and dqn.mini_batch_length == 8
    cell = (tf.TensorSpec([8], tf.float32),) * 2
    assert dqn.state_spec == (cell, cell)
    ts = TimeStep(tf.zeros([5], tf.int32), tf.zeros([5]), tf.ones([5]), tf.random.normal([5, 3]),
                  tf.zeros([5], tf.int32), tf.zeros([5], tf.int32))
    state = dqn.initial_state(5)
    for step in (dqn.rollout(ts, state), dqn.predict(ts, state)):
        assert step.action.shape == [5] and step.action.dtype == tf.int32
        assert [s.shape for s in tf.nest.flatten(step.state)] == [[5, 8]] * 4
        assert not np.allclose(step.state[0][0], 0.0)  # the LSTM moved
        np.testing.assert_array_equal(step.state[0][1], step.state[1][1])  # acting: target half mirrors
    exp = experience([[F, M, M, M]] * 8, action_spec=DISCRETE)
    assert dqn.preprocess_experience(exp) is exp  # sequences stay whole
    info, _ = unroll(dqn, exp)
    assert info.q.shape == [8, 4] and info.target_values.shape == [8, 4, 2]


def test_recurrent_dqn_state_changes_q_and_is_reset_at_first():
    dqn = recurrent_dqn()
    exp = experience([[F, M], [M, M], [M, F], [M, M]], action_spec=DISCRETE, obs=np.ones([4, 2, 3]),
                     action=np.zeros([4, 2]))
    info, _ = unroll(dqn, exp)
    # copy 0 runs on from row 0; copy 1 restarts at row 2, so its rows 2-3 repeat copy 0's rows 0-1
    np.testing.assert_allclose(info.q[2:, 1], info.q[:2, 0], rtol=1e-6)
    np.testing.assert_allclose(info.target_values[2:, 1], info.target_values[:2, 0], rtol=1e-6)
    assert not np.allclose(info.q[1, 0], info.q[0, 0])  # same observation, different state
    # a stored (non-zero) start state changes row 0, unless the row is FIRST
    start = tf.nest.map_structure(lambda s: s + 0.5, dqn.initial_state(2))
    exp = experience([[M, F], [M, M]], action_spec=DISCRETE, obs=np.ones([2, 2, 3]), action=np.zeros([2, 2]))
    moved_info, _ = unroll(dqn, exp, start)
    assert not np.allclose(moved_info.q[0, 0], info.q[0, 0])
    np.testing.assert_allclose(moved_info.q[0, 1], info.q[0, 0], rtol=1e-6)


def test_recurrent_dqn_n_step_targets_stop_at_last():
    # A constant target network (zero weights, bias 1 on every action): bootstrap values are 1.
    dqn = recurrent_dqn(n_step=2, mini_batch_length=5, gamma=0.5)
    for w in dqn.target_network.weights:
        w.assign(tf.zeros_like(w))
    dqn.target_network.biases[-1].assign(tf.ones_like(dqn.target_network.biases[-1]))
    reward = [[0, 0], [1, 1], [2, 2], [4, 4], [8, 8]]
    exp = experience([[F, F], [M, M], [M, L], [M, F], [L, M]], reward=reward,
                     discount=[[1, 1], [1, 1], [1, 0], [1, 1], [0, 1]], action_spec=DISCRETE)
    info, _ = unroll(dqn, exp)
    target, mask = dqn.sequence_targets(info)
    assert target.shape == [3, 2]
    # copy 0: rows 0..2 bootstrap from row t + 2 with gamma^2
    np.testing.assert_allclose(target[:, 0], [1 + 0.5 * 2 + 0.25, 2 + 0.5 * 4 + 0.25, 4 + 0.5 * 8 + 0.0])
    # copy 1 terminates at row 2 (LAST, discount 0): no bootstrap; row 2 is LAST and masked
    np.testing.assert_allclose(target[:2, 1], [1 + 0.5 * 2, 2.0])
    np.testing.assert_array_equal(mask, [[1, 1], [1, 1], [1, 0]])


@pytest.mark.parametrize("graph", [False, True])
def test_recurrent_dqn_update_covers_the_lstm_and_returns_sequence_priorities(graph):
    dqn = recurrent_dqn(prioritized_replay=True, target_update_period=2)
    dqn.build()
    assert {v.ref() for v in dqn.trained} == {v.ref() for v in dqn.trainable_variables}
    exp = experience([[F, M, L]] + [[M, M, F]] * 5 + [[M, L, M]] * 2, action_spec=DISCRETE)
    before, lstm_before = values(dqn.trainable_variables), values(dqn.lstm.variables_in_order)
    step = tf.function(recurrent_update, autograph=False) if graph else recurrent_update
    loss_info = step(dqn, exp, tf.ones([3]))
    assert np.isfinite(loss_info.loss.numpy()) and loss_info.priority.shape == [3]
    assert np.all(loss_info.priority.numpy() >= 0)
    assert moved(before, dqn.trainable_variables) and moved(lstm_before, dqn.lstm.variables_in_order)
    assert moved(values(dqn.target_lstm.variables_in_order), dqn.lstm.variables_in_order)
    step(dqn, exp, tf.ones([3]))  # the second update copies both networks to the targets
    for t, o in zip(dqn.target_lstm.variables_in_order, dqn.lstm.variables_in_order):
        np.testing.assert_array_equal(t.numpy(), o.numpy())


def test_recurrent_dqn_refuses_n_step_without_a_loss_row():
    with pytest.raises(ConfigError, match="n_step = 4 needs dqn.mini_batch_length > n_step"):
        recurrent_dqn(n_step=4, mini_batch_length=4)


@pytest.mark.parametrize("env,use_rollout_state", [("rlengine/CartPoleNoVelocity-v1", True),
                                                    ("CartPole-v1", False)])
@pytest.mark.thorough  # the root suite leaves it out for time; this package's tox env runs it
def test_recurrent_dqn_engine_smoke(tmp_path, env, use_rollout_state):
    from rlengine.run.engine import Engine

    raw = {"train": {"algorithm": "dqn", "env": env, "num_envs": 2, "unroll_length": 4, "num_env_steps": 200,
                     "writers": [], "eval_interval": 25, "num_eval_episodes": 1, "root_dir": str(tmp_path)},
           "dqn": {**SMALL, "lstm_size": 8, "mini_batch_length": 6, "n_step": 2, "prioritized_replay": True,
                   "target_update_period": 4, "use_rollout_state": use_rollout_state}}
    counter = UpdateCounter()
    result = Engine(raw, extra_plugins=[("counter", counter)]).train()
    assert result.env_steps == 200 and np.isfinite(result.eval_return)
    assert counter.applied > 0 and counter.skipped == 0
    assert np.isfinite(Engine(raw).evaluate(num_episodes=1)["eval/average_return"])  # the checkpoint restores


# -- exploration held across steps: SAC's gSDE, TD3's Ornstein-Uhlenbeck noise (policy state) ---------
BOX2 = type(BOX)([2], tf.float32, -1.0, 1.0)


def observations(batch, obs_dim=3, seed=0):
    obs = tf.constant(np.random.default_rng(seed).normal(size=(batch, obs_dim)), tf.float32)
    zeros = tf.zeros([batch])
    return TimeStep(tf.zeros([batch], tf.int32), zeros, zeros, obs, tf.zeros([batch, 2]), tf.zeros([batch], tf.int32))


def test_sde_holds_each_copys_noise_until_its_interval_and_redraws_after_a_reset():
    sac = make(SAC, action_spec=BOX2, use_sde=True, sde_sample_interval=3, sde_log_std_init=0.0)
    step = observations(4)
    state = sac.initial_state(4)
    assert state.weights.shape == (4, 16, 2) and state.steps.dtype == tf.int32  # [copies, features, actions]
    first = sac.rollout(step, state)
    second = sac.rollout(step, first.state)
    third = sac.rollout(step, second.state)
    np.testing.assert_array_equal(first.action, second.action)  # the same state, the same held push
    np.testing.assert_array_equal(first.action, third.action)
    assert not np.allclose(first.action[0], first.action[1])  # each copy its own weights
    redrawn = sac.rollout(step, third.state)  # 3 steps since the draw: a new one
    assert not np.allclose(redrawn.action, first.action)
    np.testing.assert_array_equal(third.state.steps, [3, 3, 3, 3])
    reset = SDEState(tf.zeros_like(third.state.weights), tf.zeros([4], tf.int32))  # what the core does at FIRST
    assert not np.allclose(sac.rollout(step, reset).action, first.action)


def test_sde_without_an_interval_keeps_its_draw_for_the_whole_episode():
    sac = make(SAC, use_sde=True, sde_log_std_init=0.0)
    step, state = observations(2), sac.initial_state(2)
    actions = []
    for _ in range(12):
        out = sac.rollout(step, state)
        actions.append(out.action.numpy())
        state = out.state
    np.testing.assert_array_equal(actions[0], actions[-1])


def test_sde_rollout_noise_has_the_variance_the_learner_trains_with():
    noise = StateDependentNoise(4, 2, log_std_init=-0.5, sample_interval=0)
    noise.log_std.assign(tf.constant([[-0.5, 0.3], [0.1, -1.0], [0.0, 0.2], [-2.0, 0.5]]))
    copies = 40_000
    features = tf.tile(tf.constant([[0.5, -1.0, 0.3, 2.0]]), [copies, 1])
    state = SDEState(tf.zeros([copies, 4, 2]), tf.zeros([copies], tf.int32))
    loc = tf.zeros([copies, 2])
    action, _ = noise.explore(loc, features, state)
    empirical = np.var(np.arctanh(np.clip(action.numpy(), -1 + 1e-7, 1 - 1e-7)), axis=0)
    expected = noise._variance(features[:1]).numpy()[0]
    np.testing.assert_allclose(empirical, expected, rtol=0.05)


def test_sde_log_prob_is_the_squashed_normal_of_its_state_dependent_scale():
    noise = StateDependentNoise(3, 2, log_std_init=-1.0, sample_interval=0)
    loc = tf.constant([[0.3, -1.5], [2.5, 0.1]])  # 2.5: clipped to 2 as gSDE does
    features = tf.constant([[1.0, -2.0, 0.5], [0.2, 0.0, 3.0]])
    action, log_prob = noise.sample(loc, features)
    scale = tf.sqrt(noise._variance(features) + 1e-6)
    squashed = tfp.distributions.TransformedDistribution(
        tfp.distributions.Normal(tf.clip_by_value(loc, -2.0, 2.0), scale), tfp.bijectors.Tanh())
    np.testing.assert_allclose(log_prob, tf.reduce_sum(squashed.log_prob(action), -1), rtol=1e-3, atol=1e-3)


def test_sac_with_sde_learns_its_noise_scale_and_acts_greedily_without_it():
    sac = make(SAC, use_sde=True)
    sac.build()
    before = values([sac.sde.log_std])
    info = None
    for _ in range(3):
        info = update(sac, experience([[M, M, M], [M, M, M]]))
    assert moved(before, [sac.sde.log_std])  # trained by the actor's loss, with the actor's optimizer
    assert "sde_std" in info.diagnostics
    step, state = observations(2), sac.initial_state(2)
    np.testing.assert_array_equal(sac.predict(step, state).action, sac.predict(step, state).action)
    assert sac.predict(step, state).state is state  # the greedy policy leaves the noise alone


def test_plain_sac_and_td3_have_no_policy_state():
    assert make(SAC).state_spec == () and make(TD3).state_spec == ()


def test_ornstein_uhlenbeck_noise_reverts_to_zero_and_keeps_its_direction():
    ou = OrnsteinUhlenbeckNoise(1, sigma=0.5)
    tf.random.set_seed(3)
    copies = 20_000
    x = tf.ones([copies, 1])
    nxt = ou.step(x).numpy()
    assert nxt.mean() == pytest.approx(1 - 0.15 * 0.01, abs=0.002)  # theta dt pulls it back
    assert nxt.std() == pytest.approx(0.5 * 0.1, rel=0.05)  # sigma sqrt(dt) per step
    walk = tf.zeros([copies, 1])
    for _ in range(100):
        walk = ou.step(walk)
    assert walk.numpy().std() == pytest.approx(0.5 * 0.1 * np.sqrt(100), rel=0.1)  # about sigma sqrt(dt t)


def test_td3_with_ornstein_uhlenbeck_carries_its_noise_in_the_state():
    td3 = make(TD3, exploration_noise=0.5, exploration_noise_type="ornstein-uhlenbeck")
    assert td3.state_spec.shape == (1,)
    step, state = observations(3), td3.initial_state(3)
    out = td3.rollout(step, state)
    greedy = td3.predict(step, state).action
    unit_noise = (out.action - greedy) / 2.0  # BOX spans [-2, 2]: half its range is 2
    np.testing.assert_allclose(unit_noise, out.state, atol=1e-5)  # the action's noise is the new state
    assert np.all(np.abs(out.state.numpy()) < 0.5)  # one step from 0: sigma sqrt(dt) = 0.05 a step


def test_engine_trains_and_restores_sac_with_sde(tmp_path):
    from rlengine.run.engine import Engine

    raw = {"train": {"algorithm": "sac", "env": "Pendulum-v1", "num_envs": 2, "unroll_length": 4,
                     "num_env_steps": 120, "writers": [], "eval_interval": 15, "num_eval_episodes": 1,
                     "root_dir": str(tmp_path)},
           "sac": {"hidden_sizes": [16, 16], "mini_batch_size": 8, "initial_collect_steps": 16,
                   "use_sde": True, "sde_sample_interval": 8}}
    result = Engine(raw).train()
    assert result.env_steps == 120 and np.isfinite(result.eval_return)
    assert np.isfinite(Engine(raw).evaluate(num_episodes=1)["eval/average_return"])  # the checkpoint restores


@pytest.mark.parametrize("algorithm, options, stored", [
    ("sac", {"use_sde": True}, False),  # the held noise: training starts from the initial state
    ("td3", {"exploration_noise_type": "ornstein-uhlenbeck"}, False),
    ("dqn", {"lstm_size": 8, "mini_batch_length": 3, "n_step": 1}, True),  # use_rollout_state: starts from it
])
@pytest.mark.thorough  # the root suite leaves it out for time; this package's tox env runs it
def test_replay_keeps_the_policy_state_only_where_training_starts_from_it(tmp_path, algorithm, options, stored):
    from rlengine.run.build import build_components
    from rlengine.run.engine import Engine

    env = "CartPole-v1" if algorithm == "dqn" else "Pendulum-v1"
    raw = {"train": {"algorithm": algorithm, "env": env, "num_envs": 2, "unroll_length": 4, "writers": [],
                     "eval_interval": 0, "root_dir": str(tmp_path)},
           algorithm: {"hidden_sizes": [8], "mini_batch_size": 4, "initial_collect_steps": 8, **options}}
    engine = Engine(raw)
    parts = build_components(engine.config, engine.plugins, str(tmp_path), writers=False)
    try:
        assert tf.nest.flatten(parts.specs.experience.state)  # every one has a policy state to carry
        assert bool(tf.nest.flatten(parts.replay._rings.spec.state)) == stored
        parts.pipeline.start()
        parts.pipeline.iterate(0)
        parts.pipeline.iterate(8)  # stored and trained on, through Learner.store
    finally:
        parts.close()


@pytest.mark.thorough  # the root suite leaves it out for time; this package's tox env runs it
@pytest.mark.parametrize("cls,spec", CASES)
def test_bfloat16_hidden_matmuls_keep_float32_variables_and_come_close_to_float32(cls, spec):
    """``hidden_matmul_dtype = "bfloat16"``: only the hidden-to-hidden matmuls run in bfloat16 (the first layer and
    the heads stay float32), the variables, losses and gradients stay float32, and the losses and gradients are
    those of float32 to bfloat16's precision."""
    exp = experience([[M, M, L, M], [M, L, F, M]], obs_dim=5, action_spec=spec)
    results = {}
    for dtype in ("float32", "bfloat16"):
        tf.random.set_seed(3)  # the same initial weights for both
        algorithm = make(cls, spec, obs_dim=5, hidden_sizes=[32, 32, 32], hidden_matmul_dtype=dtype)
        algorithm.build()
        graph = tf.function(lambda: losses_and_grads(algorithm, exp)).get_concrete_function().graph
        matmuls = [op for op in graph.get_operations() if op.type in ("MatMul", "BatchMatMulV2")]
        seeding.reset(5)  # the same sampled actions and noise for both
        results[dtype] = losses_and_grads(algorithm, exp), matmuls
    (loss32, grads32), matmuls32 = results["float32"]
    (loss16, grads16), matmuls16 = results["bfloat16"]
    assert {op.get_attr("T") for op in matmuls32} == {tf.float32}
    assert len(matmuls16) == len(matmuls32)
    in_bfloat16 = [op for op in matmuls16 if op.get_attr("T") == tf.bfloat16]
    assert 0 < len(in_bfloat16) < len(matmuls16)
    # the first layer (5 or 6 inputs) and the heads (1 or 2 outputs) stay float32: no bfloat16 matmul sees them
    dims = {d for op in in_bfloat16 for x in op.inputs for d in x.shape.as_list()}
    assert dims.isdisjoint({1, 2, 5, 6}), dims
    assert all(v.dtype == tf.float32 for _, v in grads16) and all(g.dtype == tf.float32 for g, _ in grads16)
    np.testing.assert_allclose(loss16.loss.numpy(), loss32.loss.numpy(), rtol=0.05, atol=0.02)
    for (g16, v), (g32, _) in zip(grads16, grads32):
        scale = float(tf.reduce_max(tf.abs(g32))) + 1e-3
        assert float(tf.reduce_max(tf.abs(g16 - g32))) < 0.1 * scale, v.name


def test_hidden_matmul_dtype_is_one_of_two():
    with pytest.raises((ValueError, TypeError), match="hidden_matmul_dtype"):
        SACConfig(hidden_matmul_dtype="float16")
