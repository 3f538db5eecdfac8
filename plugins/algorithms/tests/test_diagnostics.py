"""Training diagnostics: what watches training is reported under ``diagnostics/``, the loss terms under ``loss/``.

Explained variance is checked by hand and against NumPy on a fixed batch,
then in a short PPO run's metrics.jsonl; the off-policy algorithms' Q
estimates (and SAC's entropy and temperature) in their LossInfo and in a
short SAC run.
"""

import json

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_probability as tfp
from rlengine_algorithms.actor_critic import ActorCritic, RolloutInfo, explained_variance
from rlengine_algorithms.dqn import DQN
from rlengine_algorithms.ppo import PPO
from rlengine_algorithms.td3 import TD3

from rlengine import BoundedTensorSpec, Experience, StepType, TimeStep
from rlengine.run.engine import Engine

F, M, L = StepType.FIRST, StepType.MID, StepType.LAST
DISCRETE = BoundedTensorSpec([], tf.int32, 0, 1)
BOX = BoundedTensorSpec([1], tf.float32, -2.0, 2.0)


def make(cls, action_spec, obs_dim=3, **options):
    s = tf.TensorSpec
    spec = TimeStep(s([], tf.int32), s([], tf.float32), s([], tf.float32), s([obs_dim], tf.float32),
                    action_spec, s([], tf.int32))
    return cls(spec, action_spec, cls.config_class(hidden_sizes=[8], **options))


def test_explained_variance_matches_a_hand_computation():
    ret = tf.constant([1.0, 2.0, 3.0, 4.0, 100.0])
    value = tf.constant([1.0, 1.0, 3.0, 3.0, 0.0])
    mask = tf.constant([1.0, 1.0, 1.0, 1.0, 0.0])  # the last row starts no transition: left out
    # Var[ret] = 1.25 (mean 2.5), Var[ret - value] = Var[0, 1, 0, 1] = 0.25
    assert explained_variance(ret, value, mask).numpy() == pytest.approx(1.0 - 0.25 / 1.25)
    assert explained_variance(ret, ret, mask).numpy() == pytest.approx(1.0)
    assert explained_variance(ret, -ret, mask).numpy() < 0  # worse than predicting the mean
    assert np.isnan(explained_variance(tf.ones([5]), value, mask).numpy())  # returns that do not vary


def on_policy_experience(t=6, b=3, obs_dim=3):
    """Fixed ``[T + 1, B]`` rows with two episode ends and collection-time values."""
    rng = np.random.default_rng(1)
    step_type = np.full([t + 1, b], M)
    step_type[0], step_type[3, 0], step_type[4, 0], step_type[2, 2], step_type[3, 2] = F, L, F, L, F
    reward = tf.constant(rng.normal(size=[t + 1, b]), tf.float32)
    discount = tf.constant(np.where(step_type == L, 0.0, 1.0), tf.float32)
    action = tf.constant(rng.integers(0, 2, [t + 1, b]), tf.int32)
    dist = tfp.distributions.Categorical(logits=tf.zeros([t + 1, b, 2]), dtype=tf.int32)
    value = tf.constant(rng.normal(size=[t + 1, b]), tf.float32)
    obs = tf.constant(rng.normal(size=[t + 1, b, obs_dim]), tf.float32)
    return Experience(tf.constant(step_type, tf.int32), reward, discount, obs, tf.zeros_like(action),
                      tf.zeros([t + 1, b], tf.int32), action, RolloutInfo(dist, value), ())


@pytest.mark.parametrize("cls", [ActorCritic, PPO])
def test_a_first_row_followed_by_another_first_carries_no_loss(cls):
    """A multi-agent game's finished agent waits for the game's end as FIRST rows (docs/multi-agent.md)."""
    exp = on_policy_experience()
    step_type = exp.step_type.numpy()
    step_type[:, 1] = [F, M, L, F, F, F, M]  # LAST, then two waiting rows, then the next episode's FIRST
    mask = make(cls, DISCRETE).preprocess_experience(exp._replace(step_type=tf.constant(step_type))).rollout_info.mask
    np.testing.assert_array_equal(mask.numpy()[:, 1], [1, 1, 0, 0, 0, 1])


def report_of(algorithm, batch, rows):
    """The LossInfo of one update on the given rows of the flattened batch."""
    flat = tf.nest.map_structure(lambda x: tf.gather(tf.reshape(x, [-1, *x.shape[2:]]), rows), batch)
    with tf.GradientTape(persistent=True) as tape:
        info = algorithm.train_step(flat, ()).info
    return algorithm.train_complete(tape, info)[0]


@pytest.mark.parametrize("cls", [ActorCritic, PPO])
def test_every_minibatch_reports_the_whole_batch_explained_variance_of_the_collection_values(cls):
    algorithm = make(cls, DISCRETE)
    batch = algorithm.preprocess_experience(on_policy_experience())
    info = batch.rollout_info
    valid = info.mask.numpy() > 0
    ret, old_value = info.ret.numpy()[valid], info.old_value.numpy()[valid]
    expected = 1.0 - np.var(ret - old_value) / np.var(ret)
    for rows in ([0, 1, 2, 3], [5, 9, 17], list(range(18))):
        report = report_of(algorithm, batch, rows)
        assert report.diagnostics["explained_variance"].numpy() == pytest.approx(expected, rel=1e-5)
    assert {"policy", "value", "entropy"} == set(report.extra)
    moved = {"explained_variance", "value", "grad_norm", "learning_rate"}
    if cls is PPO:
        moved |= {"clip_fraction", "approx_kl"}
    assert set(report.diagnostics) == moved


def off_policy_experience(action_spec, t=3, b=4):
    rng = np.random.default_rng(2)
    action = (rng.integers(0, 2, (t, b)) if action_spec.dtype.is_integer else rng.uniform(-2, 2, (t, b, 1)))
    action = tf.constant(action, action_spec.dtype)
    return Experience(tf.fill([t, b], M), tf.ones([t, b]), tf.ones([t, b]), tf.constant(rng.normal(size=(t, b, 3)),
                      tf.float32), tf.zeros_like(action), tf.zeros([t, b], tf.int32), action, (), ())


@pytest.mark.parametrize("cls, action_spec, losses", [(TD3, BOX, {"critic", "actor"}), (DQN, DISCRETE, set())])
def test_q_estimates_are_diagnostics(cls, action_spec, losses):
    algorithm = make(cls, action_spec, mini_batch_length=3)
    batch = algorithm.preprocess_experience(off_policy_experience(action_spec))
    with tf.GradientTape(persistent=True) as tape:
        info = algorithm.train_step(batch, ()).info
    report = algorithm.train_complete(tape, info)[0]
    assert set(report.extra) == losses
    assert "q" in report.diagnostics
    assert np.isfinite(report.diagnostics["q"].numpy())


def metrics(tmp_path, algorithm, env, steps, **sections):
    """The training rows of metrics.jsonl of a short run."""
    train = {"algorithm": algorithm, "env": env, "num_env_steps": steps, "num_envs": 8, "unroll_length": 32,
             "writers": ["jsonl"], "eval_interval": 0, "root_dir": str(tmp_path), "seed": 1}
    raw = {"train": {**train, **sections.pop("train", {})}, **sections}
    Engine(raw).train()
    with open(tmp_path / "metrics.jsonl") as f:
        return [row for row in map(json.loads, f) if "loss/total" in row]


def test_ppo_explained_variance_rises_above_zero_as_it_learns_cartpole(tmp_path):
    # the CartPole preset's settings; 24 iterations of 256 steps
    rows = metrics(tmp_path, "ppo", "CartPole-v1", 6144, ppo={"num_epochs": 20, "mini_batch_size": 256,
                                                               "learning_rate": 1e-3, "gae_lambda": 0.8, "gamma": 0.98})
    explained = [row["diagnostics/explained_variance"] for row in rows]
    assert len(explained) == 24 and all(ev is not None and ev <= 1.0 for ev in explained)
    # Noisy from one iteration to the next (CartPole's returns vary little within an unroll), and back
    # near 0 once most episodes last the full 500 steps (the value targets stop varying; seed 1 does that
    # by its last iterations), but an untrained critic explains nothing and a trained one most: the best
    # of the second half is 0.99-1.0 for seeds 1-5, the first iteration within 0.1 of 0.
    assert abs(explained[0]) < 0.2
    assert max(explained[12:]) > 0.8
    assert {"diagnostics/clip_fraction", "diagnostics/approx_kl", "diagnostics/value"} <= set(rows[-1])
    assert not {"loss/clip_fraction", "loss/approx_kl", "loss/learning_rate"} & set(rows[-1])


def test_sac_reports_alpha_entropy_and_q_as_diagnostics(tmp_path):
    rows = metrics(tmp_path, "sac", "Pendulum-v1", 96, train={"num_envs": 1, "unroll_length": 16},
                   sac={"hidden_sizes": [16], "initial_collect_steps": 32, "mini_batch_size": 16})
    assert rows
    for row in rows:
        assert {"diagnostics/alpha", "diagnostics/entropy", "diagnostics/q"} <= set(row)
        assert {"loss/critic", "loss/actor", "loss/alpha_loss"} <= set(row)
        assert not {"loss/alpha", "loss/entropy", "loss/q"} & set(row)
        assert 0.0 < row["diagnostics/alpha"] <= 1.0
