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

    noise: Any = None  # None: greedy; EXPLORE: the run's exploration policy; a float: see parse_noise
    _rng: Any = None

    def act(self, observation: Any) -> Any:
        if self.policy is None:
            return self.env.action_space.sample()
        action, self._state = self.policy.predict(observation, self._state, deterministic=self.noise != EXPLORE)
        return action if self.noise in (None, EXPLORE) else self._noisy(action)

    def _noisy(self, action: Any) -> Any:
        """``action`` with ``noise``: a random action with that probability (Discrete), or Gaussian noise of
        that fraction of half the action range, clipped to it (Box)."""
        import numpy as np
        from gymnasium import spaces

        space = self.env.action_space
        if isinstance(space, spaces.Discrete):
            return space.sample() if self._rng.random() < self.noise else action
        half = (space.high - space.low) / 2
        noisy = action + self._rng.normal(0.0, self.noise, np.shape(action)) * half
        return np.clip(noisy, space.low, space.high).astype(space.dtype)

    def start_episode(self) -> None:
        self._state = None

    def record(self, dataset_id: str, episodes: int, seed: int) -> Any:
        check_new_id(dataset_id)
        self.env.action_space.seed(seed)
        import numpy as np

        self._rng = np.random.default_rng(seed)
        buffers, returns = record_episodes(self.env, self.act, episodes, seed, self.start_episode)
        self.average_return = sum(returns) / len(returns)
        # D4RL's expert reference: the greedy policy's own return (a noisy policy's is no expert's)
        expert = self.average_return if self.policy is not None and self.noise is None else None
        try:
            return write_dataset(dataset_id, self.env, buffers, self.label, f"{episodes} episodes of {self.label}",
                                 expert, reference_episodes=episodes)
        finally:
            self.env.close()


def check_new_id(dataset_id: str) -> None:
    """One line when ``dataset_id`` is not a Minari id, or names a dataset that exists (never overwritten)."""
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


def replay_dataset(run_dir: str, dataset_id: str, episodes: Optional[int]) -> tuple[Any, float]:
    """The new dataset ``dataset_id`` of the whole episodes in ``run_dir``'s replay; and their average return."""
    from rlengine_offline.replay_export import replay_buffers, replay_engine

    check_new_id(dataset_id)
    engine = replay_engine(run_dir)
    env = make_gym_env(engine.config.train.env, f"run {run_dir!r}")
    try:
        buffers, returns = replay_buffers(engine, run_dir, env, episodes)
        return write_dataset(dataset_id, env, buffers, f"the replay of {run_dir}",
                             f"{len(buffers)} episodes of the replay of {run_dir}"), sum(returns) / len(returns)
    finally:
        env.close()


def random_source(env_id: str) -> Source:
    return Source(make_gym_env(env_id, "--env"), "uniformly random actions")


#: ``--noise explore``: record the run's own exploration policy (``Policy.predict(deterministic=False)``).
EXPLORE = "explore"


def parse_noise(text: str) -> Any:
    """``--noise`` as :attr:`Source.noise`: None (greedy), :data:`EXPLORE`, or a number in [0, 1]."""
    if not text:
        return None
    if text == EXPLORE:
        return EXPLORE
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise ConfigError(f"--noise {text!r}: give 'explore' (the run's exploration policy) or a number from 0 to 1 "
                          "(the probability of a random action, or the Gaussian noise's share of half the range)")
    return value


def policy_source(run_dir: str, checkpoint: str, noise: Any = None) -> Source:
    """The policy of ``checkpoint`` of ``run_dir`` (greedy, or with ``noise``), on the run's own Gymnasium
    environment."""
    import rlengine

    choice: Any = int(checkpoint) if checkpoint.isdigit() else checkpoint
    policy = rlengine.load(run_dir, choice)  # one line naming the fix if it is not a run or has no checkpoint
    with open(os.path.join(run_dir, "config.toml"), "rb") as file:
        train = tomllib.load(file)["train"]
    env_id = train.get("env", rlengine.TrainConfig().env)
    how = "greedy policy" if noise is None else ("exploration policy" if noise == EXPLORE else f"policy, noise {noise:g},")
    return Source(make_gym_env(env_id, f"run {run_dir!r}"), f"the {how} of {run_dir} ({checkpoint})", policy,
                  noise=noise)
