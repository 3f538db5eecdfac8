"""Training from datasets through the engine: behaviour cloning learns CartPole from a scripted expert,
evaluations report the normalised score, a resumed run ends with the weights of an uninterrupted one."""

import numpy as np
import pytest

import rlengine
from rlengine.testing import MemoryWriter

pytest.importorskip("rlengine_algorithms", reason="bc builds on the algorithms plugin's networks and encoders")


def bc_run(plugins, root_dir, dataset, updates, per_iteration, force=False, **train):
    train = dict(algorithm="bc", dataset=dataset, num_env_steps=updates, eval_interval=1, num_eval_episodes=2,
                 writers=["memory"], root_dir=str(root_dir)) | train
    raw = {"train": train,
           "offline": {"updates_per_iteration": per_iteration}}
    return rlengine.Engine(raw, extra_plugins=plugins, force=force)


def test_bc_learns_cartpole_from_a_scripted_expert_and_reports_the_normalised_score(record, lean_expert, offline_plugins,
                                                                                   tmp_path):
    record("cartpole/lean-v0", "CartPole-v1", 4, lean_expert, expert=True)
    engine = bc_run(offline_plugins, tmp_path / "run", "cartpole/lean-v0", 400, 400)
    assert (engine.config.train.pipeline, engine.config.train.env) == ("offline", "CartPole-v1")  # from the dataset
    result = engine.train()
    assert result.env_steps == 400  # an offline run counts its updates
    train_row, eval_row = MemoryWriter.last.rows
    assert train_row["diagnostics/accuracy"] > 0.75 and "train/episode_return" not in train_row
    assert eval_row["eval/average_return"] >= 200  # the random reference is about 20
    low_high = rlengine_offline_references("cartpole/lean-v0")
    expected = 100 * (eval_row["eval/average_return"] - low_high[0]) / (low_high[1] - low_high[0])
    assert eval_row["eval/normalized_score"] == pytest.approx(expected)


def rlengine_offline_references(dataset_id):
    from rlengine_offline.datasets import open_dataset

    metadata = open_dataset(dataset_id).storage.metadata
    return metadata["ref_min_score"], metadata["ref_max_score"]


def test_a_dataset_needs_a_pipeline_that_reads_it_and_bc_needs_a_dataset(record, offline_plugins, tmp_path):
    record("cartpole/random-v0", "CartPole-v1", 1)
    with pytest.raises(rlengine.ConfigError, match="algorithm 'bc' learns only from a dataset and cannot learn by "
                                                   "stepping \\(pipeline 'async'\\)"):
        bc_run(offline_plugins, tmp_path / "a", "cartpole/random-v0", 10, 10, pipeline="async")
    with pytest.raises(rlengine.ConfigError, match="no installed plugin reads datasets; install the offline plugin"):
        rlengine.Engine({"train": dict(algorithm="ppo", dataset="cartpole/random-v0", root_dir=str(tmp_path / "b"))},
                        disabled_plugins=["offline"])
    with pytest.raises(rlengine.ConfigError, match="algorithm 'bc' learns from a dataset .* --dataset ID"):
        rlengine.Engine({"train": dict(algorithm="bc", root_dir=str(tmp_path / "c"))}, extra_plugins=offline_plugins)


@pytest.mark.thorough  # two runs and a resume
def test_a_resumed_offline_run_ends_with_the_weights_of_an_uninterrupted_one(record, offline_plugins, tmp_path,
                                                                             checkpoint_values):
    import numpy as np

    record("cartpole/random-v0", "CartPole-v1", 5)
    settings = dict(deterministic=True, eval_interval=0, checkpoint_interval=1)
    bc_run(offline_plugins, tmp_path / "whole", "cartpole/random-v0", 200, 50, **settings).train()
    bc_run(offline_plugins, tmp_path / "parts", "cartpole/random-v0", 100, 50, **settings).train()
    resumed = bc_run(offline_plugins, tmp_path / "parts", "cartpole/random-v0", 200, 50, force=True, **settings)
    assert resumed.train().env_steps == 200
    whole, parts = checkpoint_values(tmp_path / "whole", 4), checkpoint_values(tmp_path / "parts", 4)
    assert whole.keys() == parts.keys() and any("optimizer" in name for name in whole)
    differing = [name for name in whole if not np.array_equal(whole[name], parts[name])]
    assert not differing
    halfway = checkpoint_values(tmp_path / "whole", 2)
    assert any(not np.array_equal(halfway[name], whole[name]) for name in whole)  # the updates after it count


@pytest.mark.thorough  # 50 episodes recorded, 3000 updates
def test_bc_on_fifty_scripted_expert_episodes_scores_like_the_expert(record, lean_expert, offline_plugins, tmp_path):
    """The issue's target (greedy evaluation >= 475 from 50 expert episodes), with a scripted expert that
    scores 500 on every episode."""
    record("cartpole/lean-v0", "CartPole-v1", 50, lean_expert, expert=True)
    result = bc_run(offline_plugins, tmp_path / "run", "cartpole/lean-v0", 3000, 1000, num_eval_episodes=10).train()
    assert result.eval_return >= 475


def pendulum_controller(observation):
    """A smooth function of Pendulum's observation (cos, sin, angular velocity), within its bounds."""
    return np.clip([-3.0 * observation[1] - observation[2]], -2.0, 2.0).astype(np.float32)


def clone_error(record, plugins, root_dir, algorithm, section):
    """Train ``algorithm`` (its ``section``) for 2000 updates on 8 episodes of :func:`pendulum_controller`;
    ``(the last training row, the mean absolute error of its greedy actions on the dataset's observations)``."""
    dataset = record("pendulum/controller-v0", "Pendulum-v1", 8, pendulum_controller)
    raw = {"train": dict(algorithm=algorithm, dataset="pendulum/controller-v0", num_env_steps=2000,
                         eval_interval=0, writers=["memory"], root_dir=str(root_dir)),
           "offline": {"updates_per_iteration": 1000}, algorithm: section}
    engine = rlengine.Engine(raw, extra_plugins=plugins)
    assert engine.config.train.env == "Pendulum-v1"
    engine.train()
    policy = rlengine.load(str(root_dir), backend="tensorflow", extra_plugins=plugins)  # no background conversion
    observations = np.concatenate([episode.observations for episode in dataset.iterate_episodes()])
    expected = np.stack([pendulum_controller(o) for o in observations])
    return MemoryWriter.last.rows[-1], np.abs(policy.predict(observations)[0] - expected).mean()


@pytest.mark.thorough  # 2000 updates
@pytest.mark.parametrize("loss", ["mse", "gaussian"])
def test_bc_clones_continuous_actions(record, offline_plugins, tmp_path, loss):
    row, error = clone_error(record, offline_plugins, tmp_path / "run", "bc", {"loss": loss})
    assert np.isfinite(row["loss/bc"]) and "diagnostics/accuracy" not in row
    assert error < 0.15, error


@pytest.mark.thorough  # 2000 TD3 updates
@pytest.mark.parametrize("alpha", [0.0, 2.5])
def test_td3_bc_with_alpha_zero_clones_the_datasets_actions(record, offline_plugins, tmp_path, alpha):
    """alpha = 0 leaves only the behaviour-cloning term of the actor's loss; the paper's 2.5 adds the critic's
    pull but stays near the data."""
    row, error = clone_error(record, offline_plugins, tmp_path / "run", "td3_bc", {"alpha": alpha})
    assert np.isfinite(row["loss/critic"]) and np.isfinite(row["loss/actor"])
    assert error < (0.15 if alpha == 0 else 0.5), error
