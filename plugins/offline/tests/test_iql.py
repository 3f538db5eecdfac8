"""IQL: the expectile loss weighs residuals asymmetrically, a few updates give finite losses, Discrete
actions are refused, a resumed run ends with an uninterrupted one's weights, and IQL learns Pendulum from
noisy demonstrations better than the data's own average."""

import numpy as np
import pytest

import rlengine
from rlengine.testing import MemoryWriter

pytest.importorskip("rlengine_algorithms", reason="iql builds on the algorithms plugin's twin critics")


def iql_run(plugins, root_dir, dataset, updates, per_iteration, force=False, iql=None, **train):
    train = dict(algorithm="iql", dataset=dataset, num_env_steps=updates, eval_interval=0, writers=["memory"],
                 root_dir=str(root_dir)) | train
    raw = {"train": train, "offline": {"updates_per_iteration": per_iteration}, "iql": iql or {}}
    return rlengine.Engine(raw, extra_plugins=plugins, force=force)


def test_the_expectile_loss_weighs_a_positive_residual_by_the_expectile_and_a_negative_by_its_complement():
    from rlengine_offline.iql import expectile_loss

    residual = np.array([2.0, -2.0, 0.5, -0.5, 0.0], np.float32)  # target - V
    loss = expectile_loss(residual, 0.7).numpy()
    np.testing.assert_allclose(loss, [0.7 * 4, 0.3 * 4, 0.7 * 0.25, 0.3 * 0.25, 0.0], rtol=1e-6)
    np.testing.assert_allclose(expectile_loss(residual, 0.5).numpy(), 0.5 * residual ** 2, rtol=1e-6)


def test_a_few_iql_updates_give_finite_losses_and_discrete_actions_are_refused(record, offline_plugins, tmp_path):
    record("pendulum/random-v0", "Pendulum-v1", 2)
    engine = iql_run(offline_plugins, tmp_path / "run", "pendulum/random-v0", 20, 10,
                     iql={"mini_batch_size": 32, "hidden_sizes": [16, 16]})
    assert engine.train().env_steps == 20
    row = MemoryWriter.last.rows[-1]
    for key in ("loss/actor", "loss/critic", "loss/value", "diagnostics/awr_weight", "diagnostics/v"):
        assert np.isfinite(row[key]), key
    assert 0 < row["diagnostics/awr_weight"] <= 100
    record("cartpole/random-v0", "CartPole-v1", 1)
    with pytest.raises(rlengine.ConfigError, match="algorithm 'iql' supports Box .* not Discrete; for a Discrete "
                                                   "dataset use 'bc'"):
        iql_run(offline_plugins, tmp_path / "discrete", "cartpole/random-v0", 10, 10).train()
