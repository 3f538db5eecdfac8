"""``rlengine collect``: random play and a run's greedy policy recorded as Minari datasets, and its errors."""

import numpy as np
import pytest

import rlengine
from rlengine import cli


def collect(capsys, *argv):
    code = cli.main(["collect", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("argv, message", [
    (["--episodes", "2", "--out", "test/x-v0"], "give either RUN_DIR (record its policy) or --random --env ID"),
    (["--random", "--episodes", "2", "--out", "test/x-v0"], "--random needs --env ID"),
    (["run", "--env", "CartPole-v1", "--episodes", "2", "--out", "test/x-v0"], "--env goes with --random"),
    (["--random", "--env", "CartPole-v1", "--episodes", "0", "--out", "test/x-v0"], "record at least one episode"),
    (["--random", "--env", "NoSuchGame-v0", "--episodes", "1", "--out", "test/x-v0"],
     "--env: 'NoSuchGame-v0' is not a Gymnasium environment"),
    (["--random", "--env", "CartPole-v1", "--episodes", "1", "--out", "x/cartpole"],
     "--out 'x/cartpole' is not a Minari dataset id: write (namespace/)name-vN"),
    (["--random", "--env", "CartPole-v1", "--episodes", "1", "--out", "test/x-v0", "--noise", "0.1"],
     "--noise goes with a run's policy"),
    (["run", "--episodes", "1", "--out", "test/x-v0", "--noise", "1.5"], "--noise '1.5': give 'explore'"),
    (["run", "--episodes", "1", "--out", "test/x-v0", "--noise", "lots"], "--noise 'lots': give 'explore'"),
])
def test_mistakes_are_one_line_naming_the_fix(capsys, offline_plugins, argv, message):
    code, _, err = collect(capsys, *argv)
    assert code == 2 and message in err and err.count("\n") == 1


def test_random_play_is_recorded_and_an_existing_dataset_is_never_overwritten(capsys, datasets_dir):
    code, out, _ = collect(capsys, "--random", "--env", "CartPole-v1", "--episodes", "3", "--out", "test/random-v0")
    assert code == 0 and "wrote dataset 'test/random-v0': 3 episodes" in out
    from rlengine_offline.datasets import env_id_of, open_dataset

    dataset = open_dataset("test/random-v0")
    assert dataset.total_episodes == 3 and env_id_of(dataset) == "CartPole-v1"
    assert "ref_max_score" not in dataset.storage.metadata  # random play is no expert reference
    code, _, err = collect(capsys, "--random", "--env", "CartPole-v1", "--episodes", "1", "--out", "test/random-v0")
    assert code == 2 and "dataset 'test/random-v0' exists already" in err


@pytest.mark.thorough  # a training run, then its policy loaded and stepped
def test_a_runs_greedy_policy_is_recorded_with_its_return_as_the_expert_reference(
        capsys, record, lean_expert, offline_plugins, tmp_path):
    record("test/lean-v0", "CartPole-v1", 2, lean_expert, expert=True)
    root = tmp_path / "run"
    rlengine.Engine({"train": dict(algorithm="bc", dataset="test/lean-v0", num_env_steps=200, eval_interval=1,
                                   num_eval_episodes=1, writers=[], root_dir=str(root))},
                    extra_plugins=offline_plugins).train()
    code, out, _ = collect(capsys, str(root), "--checkpoint", "best", "--episodes", "2", "--out", "test/bc-v0")
    assert code == 0, out
    from rlengine_offline.datasets import open_dataset

    dataset = open_dataset("test/bc-v0")
    policy = rlengine.load(str(root), "best", backend="tensorflow")  # no background conversion
    returns = []
    for episode in dataset.iterate_episodes():
        greedy = [policy.predict(observation)[0] for observation in episode.observations[:-1]]
        assert np.array_equal(episode.actions, greedy)
        returns.append(episode.rewards.sum())
    assert dataset.storage.metadata["ref_max_score"] == pytest.approx(np.mean(returns))
    assert f"average return {np.mean(returns):.1f}" in out


@pytest.mark.thorough  # a training run, then three recordings of its policy
def test_a_runs_policy_is_recorded_with_noise_or_its_exploration(capsys, offline_plugins, tmp_path):
    root = tmp_path / "run"  # a PPO run barely started: its exploration policy is far from greedy
    rlengine.Engine({"train": dict(algorithm="ppo", num_env_steps=512, eval_interval=0, writers=[],
                                   root_dir=str(root))}, extra_plugins=offline_plugins).train()
    policy = rlengine.load(str(root), backend="tensorflow")
    from rlengine_offline.datasets import open_dataset

    def greedy_share(dataset_id, *flags):
        code, out, _ = collect(capsys, str(root), "--episodes", "3", "--out", dataset_id, *flags)
        assert code == 0, out
        dataset = open_dataset(dataset_id)
        assert "ref_max_score" not in dataset.storage.metadata or not flags  # a noisy policy is no expert
        same = [np.array_equal(action, policy.predict(observation)[0]) for episode in dataset.iterate_episodes()
                for observation, action in zip(episode.observations[:-1], episode.actions)]
        return sum(same) / len(same)

    assert greedy_share("test/greedy-v0", "--noise", "0") == 1.0
    assert 0.3 < greedy_share("test/random-v1", "--noise", "1") < 0.7  # a random action each step, half greedy
    assert greedy_share("test/explore-v0", "--noise", "explore") < 1.0  # sampled from the policy's distribution


@pytest.mark.thorough  # two short training runs, then their replays read back
def test_an_off_policy_runs_replay_is_written_as_a_dataset_of_its_whole_episodes(capsys, offline_plugins, tmp_path):
    root = tmp_path / "dqn"
    rlengine.Engine({"train": dict(algorithm="dqn", num_envs=2, num_env_steps=512, eval_interval=0, writers=[],
                                   root_dir=str(root))}, extra_plugins=offline_plugins).train()
    code, out, _ = collect(capsys, str(root), "--from-replay", "--out", "test/replay-v0")
    assert code == 0, out
    from rlengine_offline.datasets import open_dataset

    episodes = list(open_dataset("test/replay-v0").iterate_episodes())
    import gymnasium as gym

    cartpole = gym.make("CartPole-v1")
    cartpole.reset(seed=0)
    assert len(episodes) > 10  # random CartPole play: about 20 steps an episode, 512 steps
    for episode in episodes:
        steps = len(episode.rewards)
        assert episode.observations.shape == (steps + 1, 4) and set(episode.rewards) == {1.0}
        assert episode.terminations[-1] and not episode.truncations.any() and not episode.terminations[:-1].any()
        assert np.all(np.abs(episode.observations[0]) <= 0.05)  # CartPole's reset: within +-0.05
        for t in range(steps):  # each action leads from its observation to the next, by CartPole's dynamics
            cartpole.unwrapped.state = episode.observations[t].astype(np.float64)
            cartpole.unwrapped.steps_beyond_terminated = None
            np.testing.assert_allclose(cartpole.step(int(episode.actions[t]))[0], episode.observations[t + 1],
                                       rtol=1e-4, atol=1e-5)
    assert sum(len(e.rewards) for e in episodes) <= 512
    code, out, _ = collect(capsys, str(root), "--from-replay", "--episodes", "3", "--out", "test/replay-v1")
    assert code == 0 and "wrote dataset 'test/replay-v1': 3 episodes" in out
    ppo = tmp_path / "ppo"
    rlengine.Engine({"train": dict(algorithm="ppo", num_env_steps=256, eval_interval=0, writers=[],
                                   root_dir=str(ppo))}, extra_plugins=offline_plugins).train()
    code, _, err = collect(capsys, str(ppo), "--from-replay", "--out", "test/replay-v2")
    assert code == 2 and "its algorithm keeps no replay buffer" in err and err.count("\n") == 1
