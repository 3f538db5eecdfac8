"""Tiny image, Dict-observation and action-masked environments for fast tests (numpy only).

Each is a contextual bandit cut into episodes of ``episode_length`` actions:
every step shows a fresh situation, and reward 1 goes to the action it calls
for. A random policy earns ``1 / num_actions`` of the best return (``pixels``,
``pixels-dict``), a learned one all of it, so a short run shows whether an
encoder sees what it must.

- ``pixels``: a ``size x size x channels`` uint8 image cut into
  ``num_actions`` vertical bands (default 2: the left and the right half), one
  bright; the rewarded action is the bright band's index (0 leftmost).
- ``pixels-dict``: ``{"image": ..., "vector": one-hot of row r in {0, 1}}``
  and ``2 * num_actions`` actions, a grid of 2 rows of ``num_actions``: the
  rewarded action is ``r * num_actions + band``. The image alone or the
  vector alone earns at most half of the best return, so only an encoder
  that reads both leaves learns it (a linear read-out of both suffices).
- ``masked``: ``{"action_mask": uint8 [n], "obs": float32 [n]}`` with a legal
  set drawn afresh each step and ``obs`` the one-hot of the rewarded (legal)
  action. An illegal action raises :class:`IllegalAction` and is kept in
  ``MaskedEnv.illegal``, so a run whose policy ignores the mask cannot pass.

An untrained greedy policy is a fixed function of the few distinct
observations, right for all of them by luck with probability ``actions **
-observations``: 1/4 for ``pixels`` with 2 actions, 1/256 with 4 and for
``pixels-dict`` with the default 2 bands. Tests want the rare luck.

Copy ``i`` draws from its own generator seeded with ``seed + first_env_id + i``.
"""

from __future__ import annotations

import attrs
import numpy as np
import tensorflow as tf

from rlengine.api import Environment
from rlengine.api.data import StepType, TimeStep
from rlengine.api.network import ACTION_MASK_KEY
from rlengine.api.specs import BoundedTensorSpec
from rlengine.errors import ConfigError

#: The smallest image ``nature_cnn`` takes: its 8x8/4, 4x4/2 and 3x3/1 convolutions leave 1x1 at 36 pixels.
NATURE_CNN_MIN_SIZE = 36


@attrs.define
class PixelsConfig:
    size: int = attrs.field(default=NATURE_CNN_MIN_SIZE, validator=attrs.validators.ge(2))  # image height and width
    num_actions: int = attrs.field(default=2, validator=attrs.validators.ge(2))  # bands, one per action, at most size
    channels: int = attrs.field(default=1, validator=attrs.validators.in_((1, 3)))  # 1 (grey) or 3 (RGB)
    episode_length: int = attrs.field(default=4, validator=attrs.validators.gt(0))  # rewarded choices per episode


@attrs.define
class MaskedConfig:
    num_actions: int = attrs.field(default=4, validator=attrs.validators.ge(2))  # entries of the action mask
    episode_length: int = attrs.field(default=4, validator=attrs.validators.gt(0))  # choices per episode


class IllegalAction(RuntimeError):
    """``masked`` received an action its mask forbade."""


def advance_episodes(t: np.ndarray, episode_length: int) -> tuple:
    """The episode clock of the kit's environments: each copy's next ``(t, restarted, step type)``.

    ``t`` counts the actions taken in the episode; the step after the
    ``episode_length``-th one (LAST) begins a new episode (FIRST, its action ignored).
    """
    restart = t >= episode_length
    t = np.where(restart, 0, t + 1)
    last = t >= episode_length
    return t, restart, np.where(restart, StepType.FIRST, np.where(last, StepType.LAST, StepType.MID))


class _Situations(Environment):
    """Episodes of ``episode_length`` actions; each step every copy draws a fresh situation.

    Subclasses keep the situation in arrays and implement ``num_actions()``,
    ``observation_spec()``, ``_draw(rows)`` (new situations for those copies),
    ``_rewards(action, acted)`` (the rewards of the copies where ``acted``, for
    the situation they were shown) and ``_observation()``.
    """

    def __init__(self, env_id, num_envs, seed, first_env_id=0, config=None):
        super().__init__(env_id, num_envs, seed, first_env_id, config)
        self.ids = np.arange(first_env_id, first_env_id + num_envs, dtype=np.int32)
        self.rngs = [np.random.default_rng(None if seed is None else seed + int(i)) for i in self.ids]
        self.t = np.zeros(num_envs, np.int32)
        self.closed = False

    def action_spec(self):
        return BoundedTensorSpec([], tf.int32, 0, self.num_actions() - 1)

    def time_step_spec(self):
        s = tf.TensorSpec
        return TimeStep(s([], tf.int32), s([], tf.float32), s([], tf.float32), self.observation_spec(),
                        self.action_spec(), s([], tf.int32))

    def reset(self):
        self.t[:] = 0
        self._draw(np.arange(self.num_envs))
        n = self.num_envs
        return self._time_step(np.full(n, StepType.FIRST), np.zeros(n), np.ones(n), np.zeros(n))

    def step(self, action):
        action = np.asarray(action).astype(np.int32).reshape([self.num_envs])
        self.t, restart, step_type = advance_episodes(self.t, self.config.episode_length)
        acted = ~restart  # a restarting copy's action is ignored: a new episode begins
        reward = np.zeros(self.num_envs)
        if acted.any():
            reward[acted] = self._rewards(action, acted)
        self._draw(np.arange(self.num_envs))
        discount = np.where(step_type == StepType.LAST, 0.0, 1.0)
        return self._time_step(step_type, reward, discount, np.where(restart, 0, action))

    def _time_step(self, step_type, reward, discount, action):
        return TimeStep(step_type.astype(np.int32), reward.astype(np.float32), discount.astype(np.float32),
                        self._observation(), action.astype(np.int32), self.ids.copy())

    def close(self):
        self.closed = True


class PixelsEnv(_Situations):
    """``pixels``: the index of the image's bright band is the rewarded action (with 2: 0 left, 1 right)."""

    config_class = PixelsConfig

    def __init__(self, env_id, num_envs, seed, first_env_id=0, config=None):
        config = config or PixelsConfig()
        if config.num_actions > config.size:
            raise ConfigError(f"env {env_id!r}: num_actions ({config.num_actions}) must be at most size "
                              f"({config.size}), one band of pixels per action; lower num_actions or raise size")
        super().__init__(env_id, num_envs, seed, first_env_id, config)
        self.side = np.zeros(num_envs, np.int32)

    def num_actions(self) -> int:
        return self.config.num_actions

    def observation_spec(self):
        c = self.config
        return tf.TensorSpec([c.size, c.size, c.channels], tf.uint8)

    def _draw(self, rows):
        for i in rows:
            self.side[i] = self.rngs[i].integers(self.config.num_actions)

    def _rewarded(self):
        return self.side

    def _rewards(self, action, acted):
        return (action[acted] == self._rewarded()[acted]).astype(np.float32)

    def _images(self):
        c = self.config
        edges = np.linspace(0, c.size, c.num_actions + 1).astype(int)  # band i: columns edges[i] .. edges[i + 1]
        images = np.zeros([self.num_envs, c.size, c.size, c.channels], np.uint8)
        for band in range(c.num_actions):
            images[self.side == band, :, edges[band]:edges[band + 1]] = 255
        return images

    def _observation(self):
        return self._images()

    def render(self):
        image = self._images()[0]
        return np.repeat(image, 3, axis=-1) if image.shape[-1] == 1 else image


class PixelsDictEnv(PixelsEnv):
    """``pixels-dict``: ``{"image", "vector": one-hot row}``; action ``row * num_actions + band`` is rewarded."""

    def __init__(self, env_id, num_envs, seed, first_env_id=0, config=None):
        super().__init__(env_id, num_envs, seed, first_env_id, config)
        self.row = np.zeros(num_envs, np.int32)

    def num_actions(self) -> int:
        return 2 * self.config.num_actions

    def observation_spec(self):
        return {"image": super().observation_spec(), "vector": tf.TensorSpec([2], tf.float32)}

    def _draw(self, rows):
        super()._draw(rows)
        for i in rows:
            self.row[i] = self.rngs[i].integers(2)

    def _rewarded(self):
        return self.row * self.config.num_actions + self.side

    def _observation(self):
        vector = np.eye(2, dtype=np.float32)[self.row]
        return {"image": self._images(), "vector": vector}


class MaskedEnv(_Situations):
    """``masked``: a fresh legal set each step; reward 1 for the legal action ``obs`` points at, 0 for the others.

    ``MaskedEnv.checked`` counts the actions checked against a mask and
    ``MaskedEnv.illegal`` lists ``(env_id, action, mask)`` of each illegal one,
    across every instance (tests clear both with :meth:`forget`).
    """

    config_class = MaskedConfig
    checked = 0
    illegal: list = []

    def __init__(self, env_id, num_envs, seed, first_env_id=0, config=None):
        super().__init__(env_id, num_envs, seed, first_env_id, config or MaskedConfig())
        self.mask = np.ones([num_envs, self.config.num_actions], np.uint8)
        self.goal = np.zeros(num_envs, np.int32)

    @classmethod
    def forget(cls) -> None:
        cls.checked = 0
        cls.illegal = []

    def num_actions(self) -> int:
        return self.config.num_actions

    def observation_spec(self):
        n = self.config.num_actions
        return {ACTION_MASK_KEY: tf.TensorSpec([n], tf.uint8), "obs": tf.TensorSpec([n], tf.float32)}

    def _draw(self, rows):
        n = self.config.num_actions
        for i in rows:
            rng = self.rngs[i]
            legal = rng.random(n) < 0.5
            legal[rng.integers(n)] = True  # never an empty legal set
            self.mask[i] = legal
            self.goal[i] = rng.choice(np.flatnonzero(legal))

    def _rewards(self, action, acted):
        rows = np.flatnonzero(acted)
        MaskedEnv.checked += len(rows)
        bad = [i for i in rows if not 0 <= action[i] < self.config.num_actions or not self.mask[i, action[i]]]
        if bad:
            i = bad[0]
            MaskedEnv.illegal.extend((int(self.ids[j]), int(action[j]), self.mask[j].tolist()) for j in bad)
            raise IllegalAction(f"masked env copy {self.ids[i]} got illegal action {action[i]} "
                                f"(action_mask {self.mask[i].tolist()}); the policy must mask its logits or Q-values")
        return (action[rows] == self.goal[rows]).astype(np.float32)

    def _observation(self):
        obs = np.eye(self.config.num_actions, dtype=np.float32)[self.goal]
        return {ACTION_MASK_KEY: self.mask.copy(), "obs": obs}
