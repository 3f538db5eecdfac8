"""Recording episodes into a Minari dataset, with Minari's own writer.

Each episode is stepped to its end, then handed whole to :func:`minari.create_dataset_from_buffers` as an
``EpisodeBuffer`` of arrays. Minari's step-by-step ``DataCollector`` would need JAX (its ``create``
extra) to append each step; a whole episode needs only NumPy and h5py.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

#: ``policy(observation) -> action`` for one (unbatched) observation; ``reset()`` before each episode
Act = Callable[[Any], Any]


def record_episodes(env: Any, act: Act, episodes: int, seed: int,
                    start_episode: Optional[Callable[[], None]] = None) -> tuple[list, list]:
    """``(episode buffers, returns)`` of ``episodes`` episodes of ``act`` on the Gymnasium ``env``;
    episode ``i`` starts from ``env.reset(seed=seed + i)``."""
    from minari.data_collector import EpisodeBuffer

    buffers, returns = [], []
    for i in range(episodes):
        if start_episode is not None:
            start_episode()
        observation, _ = env.reset(seed=seed + i)
        observations, actions, rewards, terminations, truncations = [observation], [], [], [], []
        done = False
        while not done:
            action = act(observation)
            observation, reward, terminated, truncated, _ = env.step(action)
            observations.append(observation)
            actions.append(action)
            rewards.append(float(reward))
            terminations.append(bool(terminated))
            truncations.append(bool(truncated))
            done = terminated or truncated
        buffers.append(EpisodeBuffer(
            id=i, observations=stacked(observations), actions=stacked(actions), rewards=np.asarray(rewards),
            terminations=np.asarray(terminations), truncations=np.asarray(truncations), infos={}))
        returns.append(sum(rewards))
    return buffers, returns


def stacked(values: list) -> Any:
    """One array per leaf of a list of observations or actions: a Dict space's values stay a dict, a Tuple
    space's a tuple, each leaf stacked over the steps (what Minari's episode buffers take)."""
    first = values[0]
    if isinstance(first, dict):
        return {key: stacked([value[key] for value in values]) for key in first}
    if isinstance(first, tuple):
        return tuple(stacked([value[i] for value in values]) for i in range(len(first)))
    return np.stack(values)


def write_dataset(dataset_id: str, env: Any, buffers: list, algorithm: str, description: str,
                  expert_return: Optional[float] = None, reference_episodes: int = 100) -> Any:
    """The new dataset ``dataset_id`` of ``buffers``; with ``expert_return`` it gets D4RL's reference scores
    (``ref_max_score`` that return, ``ref_min_score`` Minari's random play over ``reference_episodes``)."""
    import warnings

    import minari

    with warnings.catch_warnings():  # Minari warns of each metadata field left unset (author, permalink, ...)
        warnings.simplefilter("ignore", UserWarning)
        return minari.create_dataset_from_buffers(
            dataset_id, buffers, env=env.spec, algorithm_name=algorithm, author="rlengine", description=description,
            ref_max_score=expert_return, num_episodes_average_score=reference_episodes)
