"""Discrete CQL: the conservative term, a few updates through the engine, its refusals, and what the term
does on a CartPole dataset (CQL learns it, DQN on the same data does not)."""

import numpy as np
import pytest
import tensorflow as tf

import rlengine
from rlengine.testing import MemoryWriter

pytest.importorskip("rlengine_algorithms", reason="discrete_cql builds on the algorithms plugin's DQN")


def run(plugins, root_dir, dataset, updates, per_iteration, **section):
    raw = {"train": dict(algorithm="discrete_cql", dataset=dataset, num_env_steps=updates, eval_interval=1,
                         num_eval_episodes=5, writers=["memory"], root_dir=str(root_dir)),
           "offline": {"updates_per_iteration": per_iteration}, "discrete_cql": section}
    return rlengine.Engine(raw, extra_plugins=plugins)


def test_the_gap_is_the_soft_maximum_over_actions_less_the_datasets_action():
    from rlengine_offline.discrete_cql import conservative_gap

    q_all = tf.constant([[1.0, 2.0, 3.0], [0.0, 0.0, tf.float32.min]])  # row 2: its third action is masked out
    q_data = tf.constant([3.0, 0.0])
    expected = [np.log(np.exp(1.0) + np.exp(2.0) + np.exp(3.0)) - 3.0, np.log(2.0)]
    np.testing.assert_allclose(conservative_gap(q_all, q_data).numpy(), expected, rtol=1e-6)


def test_a_few_updates_report_the_term_and_box_actions_or_an_lstm_are_refused(record, offline_plugins, tmp_path):
    record("cartpole/random-v0", "CartPole-v1", 2)
    engine = run(offline_plugins, tmp_path / "run", "cartpole/random-v0", 20, 10, mini_batch_size=32,
                 hidden_sizes=[16], alpha=2.0)
    assert engine.train().env_steps == 20
    row = MemoryWriter.last.rows[-2]  # the last training row (the evaluation's follows it)
    for key in ("loss/total", "loss/conservative", "diagnostics/conservative_gap", "diagnostics/q"):
        assert np.isfinite(row[key]), key
    assert row["loss/conservative"] == pytest.approx(2.0 * row["diagnostics/conservative_gap"], rel=1e-4)
    record("pendulum/random-v0", "Pendulum-v1", 1)
    with pytest.raises(rlengine.ConfigError, match="'discrete_cql' supports Discrete actions only; for Box "
                                                   r"\(continuous\) actions use 'cql'"):
        run(offline_plugins, tmp_path / "box", "pendulum/random-v0", 10, 10).train()
    with pytest.raises(rlengine.ConfigError, match="discrete_cql.lstm_size = 8: discrete_cql has no recurrent"):
        run(offline_plugins, tmp_path / "lstm", "cartpole/random-v0", 10, 10, lstm_size=8).train()


@pytest.mark.thorough  # 30 episodes recorded, two runs of 3000 updates
def test_cql_learns_cartpole_from_mixed_data_where_dqn_on_the_same_data_fails(record, lean_expert, offline_plugins,
                                                                              tmp_path):
    """30 episodes of a policy that plays the scripted expert's move 70% of the time, else a random one. The
    term is what makes the difference: DQN on the same rows (alpha 0) rates the moves the data rarely shows
    as it pleases and drops the pole at once (it scored 9.2 where CQL scored 500)."""
    rng = np.random.default_rng(0)
    record("cartpole/mixed-v0", "CartPole-v1", 30, lambda o: lean_expert(o) if rng.random() < 0.7 else int(rng.integers(2)))
    cql = run(offline_plugins, tmp_path / "cql", "cartpole/mixed-v0", 3000, 1000).train()
    dqn = run(offline_plugins, tmp_path / "dqn", "cartpole/mixed-v0", 3000, 1000, alpha=0.0).train()
    assert cql.eval_return >= 475 and dqn.eval_return < 100, (cql.eval_return, dqn.eval_return)
