"""TD3+BC's observation normalisation: the statistics are the dataset's, checkpointed, kept through a resume,
and ``load().predict()`` applies them to raw observations."""

import numpy as np
import pytest

import rlengine

pytest.importorskip("rlengine_algorithms", reason="td3_bc is the algorithms plugin's TD3")


def controller(observation):
    """Pendulum: a smooth torque of its observation (cos, sin, angular velocity)."""
    return np.clip([-3.0 * observation[1] - observation[2]], -2.0, 2.0).astype(np.float32)


def td3_bc_run(plugins, root_dir, updates, force=False):
    raw = {"train": dict(algorithm="td3_bc", dataset="pendulum/controller-v0", num_env_steps=updates,
                         eval_interval=0, checkpoint_interval=1, writers=[], root_dir=str(root_dir)),
           "offline": {"updates_per_iteration": 10}, "td3_bc": {"hidden_sizes": [16], "mini_batch_size": 32}}
    return rlengine.Engine(raw, extra_plugins=plugins, force=force)


def statistics(values: dict) -> tuple:
    (mean,) = [v for name, v in values.items() if "observation_mean" in name]
    (scale,) = [v for name, v in values.items() if "observation_scale" in name]
    return mean, scale


@pytest.mark.thorough  # two short runs, a resume and a load
def test_td3_bc_acts_on_raw_observations_normalised_by_the_datasets_statistics_kept_through_a_resume(
        record, offline_plugins, tmp_path, checkpoint_values):
    dataset = record("pendulum/controller-v0", "Pendulum-v1", 2, controller)
    observations = np.concatenate([episode.observations for episode in dataset.iterate_episodes()])
    mean, scale = observations.mean(0), observations.std(0) + 1e-3  # the paper's epsilon
    root = tmp_path / "run"
    td3_bc_run(offline_plugins, root, 20).train()
    assert np.allclose(statistics(checkpoint_values(root, 2)), (mean, scale), atol=1e-6)

    resumed = td3_bc_run(offline_plugins, root, 40, force=True)  # a resume refits nothing: its checkpoint has them
    assert resumed.train().env_steps == 40
    assert np.allclose(statistics(checkpoint_values(root, 4)), (mean, scale), atol=1e-6)

    policy = rlengine.load(str(root), backend="tensorflow", extra_plugins=offline_plugins)
    actions = policy.predict(observations)[0]
    with resumed.restored() as components:
        algorithm = components.algorithm

        def actor(observation):  # TD3's greedy policy on what it is given
            features = algorithm.actor_encoder(observation.astype(np.float32))
            return algorithm.scale.to_env(algorithm._act(algorithm.actor, features)).numpy()

        assert np.allclose(actions, actor((observations - mean) / scale), atol=1e-5)
        assert not np.allclose(actions, actor(observations), atol=1e-3)  # the statistics change what it does
