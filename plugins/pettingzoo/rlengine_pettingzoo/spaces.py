"""The agents' spaces as one row spec: what every row of a multi-agent batch holds.

Every agent of a game becomes a batch row of the same spec, so one policy acts for them all
(parameter sharing). Observations:

- agents whose observation spaces are equal keep them; flat ``Box`` observations of different
  lengths are zero-padded at the end to the longest, and so are the flat ``observation`` leaves of
  dict observations otherwise alike (other differing spaces are refused);
- with ``agent_id`` on and more than one agent, a one-hot of the agent's index (``float32 [A]``) is
  appended to a flat ``Box`` observation, or added as the leaf ``agent_id`` of a dict observation
  (``{"observation", "action_mask"}`` as PettingZoo's classic games give it);
- dict leaves keep their keys, so an ``action_mask`` leaf masks the policy's logits as the engine's
  algorithms do it.

Actions: ``Discrete(n)`` (``int32`` in ``[0, n - 1]``) or a float ``Box``, one space for every agent.
Agents whose ``Discrete`` spaces differ in size share the largest, and every row then carries an
``action_mask`` (``int8 [n]``) that allows only its agent's own actions: a flat observation becomes
``{"observation": ..., "action_mask": ...}``, a dict observation gets the leaf (or its own mask,
padded with zeros and met with the agent's). Float ``Box`` action spaces must be equal. Floating
observations become ``float32``; integer ones keep their dtype.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import tensorflow as tf
from gymnasium import spaces

from rlengine import BoundedTensorSpec, ConfigError

__all__ = ["RowLayout"]

AGENT_ID_KEY = "agent_id"
ACTION_MASK_KEY = "action_mask"


def _dtype(space: spaces.Box) -> np.dtype:
    return np.dtype(np.float32) if np.issubdtype(space.dtype, np.floating) else np.dtype(space.dtype)


def _flat_box(space: Any) -> bool:
    return isinstance(space, spaces.Box) and len(space.shape) == 1


def _leaf_spec(space: Any, env_id: str) -> tf.TensorSpec:
    if not isinstance(space, spaces.Box):
        raise ConfigError(f"environment {env_id!r} has an observation space {space}, which rlengine-pettingzoo "
                          f"does not map; it maps Box observations and dicts of them")
    return tf.TensorSpec(space.shape, tf.as_dtype(_dtype(space)))


def _without_mask(space: Any) -> Any:
    """A dict space without its ``action_mask`` (masks may differ where the action spaces do), else ``space``."""
    if isinstance(space, spaces.Dict) and ACTION_MASK_KEY in space.spaces:
        return spaces.Dict({k: v for k, v in space.spaces.items() if k != ACTION_MASK_KEY})
    return space


def _dict_of_flat_observation(space: Any, first: Any) -> bool:
    """Whether ``space`` is a dict like ``first`` but for the lengths of a flat ``observation`` leaf (of one dtype)
    and of its ``action_mask``."""
    if not (isinstance(space, spaces.Dict) and isinstance(first, spaces.Dict) and set(space) == set(first)):
        return False
    if "observation" not in space.spaces or not all(_flat_box(s["observation"]) for s in (space, first)):
        return False
    others = set(space) - {"observation", ACTION_MASK_KEY}
    return _dtype(space["observation"]) == _dtype(first["observation"]) and all(space[k] == first[k] for k in others)


def _padded(obs: np.ndarray, length: int) -> np.ndarray:
    """A flat observation zero-padded at the end to ``length``."""
    return obs if obs.shape[0] >= length else np.concatenate([obs, np.zeros(length - obs.shape[0], obs.dtype)])


def _action_spec(space: Any, env_id: str) -> BoundedTensorSpec:
    if isinstance(space, spaces.Discrete) and int(space.start) == 0:
        return BoundedTensorSpec((), tf.int32, 0, int(space.n) - 1)
    if isinstance(space, spaces.Box) and np.issubdtype(space.dtype, np.floating):
        return BoundedTensorSpec(space.shape, tf.float32, space.low.astype(np.float32), space.high.astype(np.float32))
    raise ConfigError(f"environment {env_id!r} has an action space {space}, which rlengine-pettingzoo does not "
                      f"map; it maps Discrete and float Box actions")


class RowLayout:
    """How the observation of agent ``i`` becomes its row: the row's spec and the conversion."""

    def __init__(self, env_id: str, agents: list, observation_space: Callable, action_space: Callable,
                 agent_id: bool):
        self.env_id, self.agents = env_id, list(agents)
        obs_spaces = [observation_space(a) for a in self.agents]
        act_spaces = [action_space(a) for a in self.agents]
        self._check_mask_lengths(obs_spaces, act_spaces)
        self.action_space, self.own_actions = self._shared_action_space(act_spaces)
        self.action_spec = _action_spec(self.action_space, env_id)
        self.pad_to = self._padding(obs_spaces)
        self.one_hot = np.eye(len(self.agents), dtype=np.float32) if agent_id and len(self.agents) > 1 else None
        self.observation_spec = self._observation_spec(obs_spaces[0])
        if self.own_actions is not None:
            self.observation_spec = self._with_mask_spec(self.observation_spec)

    def _check_mask_lengths(self, obs_spaces: list, act_spaces: list) -> None:
        """A game's ``action_mask`` has one entry per action of its agent's ``Discrete`` space; else one line
        naming the agent (a longer or shorter mask would mask the wrong actions, or index past them)."""
        for agent, obs, act in zip(self.agents, obs_spaces, act_spaces):
            mask = obs.spaces.get(ACTION_MASK_KEY) if isinstance(obs, spaces.Dict) else None
            if mask is None or not isinstance(act, spaces.Discrete) or mask.shape == (int(act.n),):
                continue
            raise ConfigError(f"environment {self.env_id!r}: agent {agent!r} has an action_mask of shape "
                              f"{mask.shape} for its action space {act}; a mask has one entry per action "
                              f"({int(act.n)}): fix the game's observation space")

    def _shared_action_space(self, act_spaces: list) -> tuple:
        """``(the rows' action space, each agent's action mask or None)``: the largest of differing
        ``Discrete`` spaces, each agent masked to its own actions; equal spaces as they are."""
        if all(s == act_spaces[0] for s in act_spaces):
            return act_spaces[0], None
        if all(isinstance(s, spaces.Discrete) and int(s.start) == 0 for s in act_spaces):
            largest = max(int(s.n) for s in act_spaces)
            own = np.zeros((len(act_spaces), largest), np.int8)
            for i, s in enumerate(act_spaces):
                own[i, : int(s.n)] = 1
            return spaces.Discrete(largest), own
        kinds = {a: str(s) for a, s in zip(self.agents, act_spaces)}
        raise ConfigError(f"environment {self.env_id!r}: its agents have different action spaces {kinds}; one policy "
                          f"acts for every agent here, which joins Discrete spaces of different sizes (each agent "
                          f"masked to its own actions) but no others (pick a game whose agents share a space)")

    def _with_mask_spec(self, spec: Any) -> Any:
        """``spec`` with an ``action_mask`` leaf of the shared action space (a flat one wrapped in a dict)."""
        mask = tf.TensorSpec((int(self.action_space.n),), tf.int8)
        return {**spec, ACTION_MASK_KEY: mask} if isinstance(spec, dict) else \
            {"observation": spec, ACTION_MASK_KEY: mask}

    def _padding(self, obs_spaces: list) -> int | None:
        """The padded length when flat ``Box`` observations differ in length, else ``None``."""
        if all(_without_mask(s) == _without_mask(obs_spaces[0]) for s in obs_spaces):
            return None  # alike but for their masks' lengths, which the shared action space sets
        if all(_flat_box(s) and _dtype(s) == _dtype(obs_spaces[0]) for s in obs_spaces):
            return max(s.shape[0] for s in obs_spaces)
        if all(_dict_of_flat_observation(s, obs_spaces[0]) for s in obs_spaces):  # their "observation" leaves
            return max(s["observation"].shape[0] for s in obs_spaces)
        kinds = {a: str(s) for a, s in zip(self.agents, obs_spaces)}
        raise ConfigError(f"environment {self.env_id!r}: its agents have different observation spaces {kinds}; "
                          f"rlengine-pettingzoo pads flat Box observations of one dtype to the longest, and cannot "
                          f"join these (pick a game whose agents share a space)")

    def _observation_spec(self, space: Any) -> Any:
        if isinstance(space, spaces.Dict):
            spec = {key: _leaf_spec(sub, self.env_id) for key, sub in space.spaces.items()}
            if self.pad_to is not None:
                spec["observation"] = tf.TensorSpec((self.pad_to,), spec["observation"].dtype)
            if self.one_hot is not None:
                spec[AGENT_ID_KEY] = tf.TensorSpec((len(self.agents),), tf.float32)
            return spec
        leaf = _leaf_spec(space, self.env_id)
        self._dtype = leaf.dtype.as_numpy_dtype
        width = self.pad_to or (space.shape[0] if _flat_box(space) else None)
        if self.one_hot is None:
            return tf.TensorSpec((width,), leaf.dtype) if width is not None else leaf
        if width is None:  # an image: the id goes beside it
            return {"observation": leaf, AGENT_ID_KEY: tf.TensorSpec((len(self.agents),), tf.float32)}
        return tf.TensorSpec((width + len(self.agents),), tf.float32)

    def zeros(self) -> Any:
        """The row of an agent that is not in the game: zeros, no agent id, and action 0 its one legal action
        (a mask of zeros only would leave the policy no action to take)."""
        rows = tf.nest.map_structure(lambda s: np.zeros(s.shape, s.dtype.as_numpy_dtype), self.observation_spec)
        if isinstance(rows, dict) and ACTION_MASK_KEY in rows:
            rows[ACTION_MASK_KEY][..., 0] = 1
        return rows

    def row(self, index: int, observation: Any) -> Any:
        """Agent ``index``'s observation as its row, in the spec's dtypes (fresh arrays)."""
        if self.own_actions is None:
            return self._row(index, observation)
        own = self.own_actions[index]
        if not isinstance(observation, dict):
            out = self._row(index, observation)
            return {**out, ACTION_MASK_KEY: own.copy()} if isinstance(out, dict) else \
                {"observation": out, ACTION_MASK_KEY: own.copy()}
        game_mask = observation.get(ACTION_MASK_KEY)
        mask = own.copy()
        if game_mask is not None:  # the game's own, padded to the shared space and met with the agent's
            mask[: len(game_mask)] &= np.asarray(game_mask, np.int8)
            mask[len(game_mask):] = 0
        if not mask.any():  # nothing allowed (a game's end): action 0, which is ignored
            mask[0] = 1
        return self._row(index, {**observation, ACTION_MASK_KEY: mask})

    def _row(self, index: int, observation: Any) -> Any:
        spec = self.observation_spec
        if isinstance(observation, dict):
            out = {key: np.array(observation[key], spec[key].dtype.as_numpy_dtype) for key in observation}
            if self.pad_to is not None:
                out["observation"] = _padded(out["observation"], self.pad_to)
            mask = out.get(ACTION_MASK_KEY)
            if mask is not None and not mask.any():  # a game's end may allow nothing: action 0, which is ignored
                mask[..., 0] = 1
            if self.one_hot is not None:
                out[AGENT_ID_KEY] = self.one_hot[index]
            return out
        obs = np.asarray(observation, self._dtype)
        if isinstance(spec, dict) and ACTION_MASK_KEY in spec and AGENT_ID_KEY not in spec:
            spec = spec["observation"]  # the flat observation a mask was put beside
        if self.pad_to is not None:
            obs = _padded(obs, self.pad_to)
        if self.one_hot is None:
            return obs
        if isinstance(spec, dict):
            return {"observation": obs, AGENT_ID_KEY: self.one_hot[index]}
        return np.concatenate([obs.astype(np.float32), self.one_hot[index]])
