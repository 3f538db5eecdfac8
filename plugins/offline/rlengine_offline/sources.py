"""What ``rlengine collect`` records: a run's greedy policy, or uniformly random actions."""

from __future__ import annotations

import os
from typing import Any, Optional

import attrs
import tomllib

from rlengine import ConfigError
from rlengine_offline.recording import record_episodes, write_dataset


def make_gym_env(env_id: str, where: str) -> Any:
    """The Gymnasium environment ``env_id``; one line naming ``where`` it came from if Gymnasium has none."""
    import gymnasium as gym

    try:
        return gym.make(env_id)
    except gym.error.Error as exc:
        raise ConfigError(f"{where}: {env_id!r} is not a Gymnasium environment ({exc}); rlengine collect records "
                          "Gymnasium environments, the ones Minari datasets name") from None


@attrs.define
class Source:
    """Episodes of ``act`` on ``env``, written as a dataset by :meth:`record`."""

    env: Any
    label: str  # what acted, for the dataset's algorithm_name and the summary line
    policy: Optional[Any] = None  # an rlengine Policy (its state is carried within each episode), else random
    average_return: float = 0.0
    _state: Any = None

    def act(self, observation: Any) -> Any:
        if self.policy is None:
            return self.env.action_space.sample()
        action, self._state = self.policy.predict(observation, self._state)
        return action

    def start_episode(self) -> None:
        self._state = None

    def record(self, dataset_id: str, episodes: int, seed: int) -> Any:
        import minari
        from minari.dataset.minari_dataset import parse_dataset_id

        try:
            parse_dataset_id(dataset_id)
        except ValueError:
            raise ConfigError(f"--out {dataset_id!r} is not a Minari dataset id: write (namespace/)name-vN, the "
                              "namespace two characters or more, e.g. cartpole/expert-v0") from None
        if dataset_id in minari.list_local_datasets():
            raise ConfigError(f"dataset {dataset_id!r} exists already; choose another --out, or delete it first "
                              f"(minari delete {dataset_id})")
        self.env.action_space.seed(seed)
        buffers, returns = record_episodes(self.env, self.act, episodes, seed, self.start_episode)
        self.average_return = sum(returns) / len(returns)
        expert = None if self.policy is None else self.average_return  # D4RL's expert reference: this policy's
        try:
            return write_dataset(dataset_id, self.env, buffers, self.label, f"{episodes} episodes of {self.label}",
                                 expert, reference_episodes=episodes)
        finally:
            self.env.close()


def random_source(env_id: str) -> Source:
    return Source(make_gym_env(env_id, "--env"), "uniformly random actions")


def policy_source(run_dir: str, checkpoint: str) -> Source:
    """The greedy policy of ``checkpoint`` of ``run_dir``, on the run's own Gymnasium environment."""
    import rlengine

    choice: Any = int(checkpoint) if checkpoint.isdigit() else checkpoint
    policy = rlengine.load(run_dir, choice)  # one line naming the fix if it is not a run or has no checkpoint
    with open(os.path.join(run_dir, "config.toml"), "rb") as file:
        train = tomllib.load(file)["train"]
    env_id = train.get("env", rlengine.TrainConfig().env)
    return Source(make_gym_env(env_id, f"run {run_dir!r}"), f"the greedy policy of {run_dir} ({checkpoint})", policy)
