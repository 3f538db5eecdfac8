"""The Environment interface: a batch of environment copies stepped together.

The core drives an environment like this::

    env = EnvCls(env_id="CartPole-v1", num_envs=8, seed=0, first_env_id=0, config=cfg)
    time_step = env.reset()                    # TimeStep of numpy arrays, [B, ...]
    while training:
        time_step = env.step(actions)          # actions: nest of numpy arrays [B, ...]
    env.close()

Each copy starts a new episode by itself after a ``LAST`` step: the next
``step`` ignores its action for that copy and returns a ``FIRST`` step with
reward 0 and discount 1. ``env_id`` numbers the copies from ``first_env_id``.

An environment that must behave differently when it is evaluated (e.g. Atari:
clipped rewards and a life lost as an episode's end for training, the raw game
score for evaluation) declares an ``evaluation`` field in its config class: the
core builds evaluation copies with ``evaluation = True``. One that reads the
run's files (e.g. an opponent played by the run's own checkpoints) declares a
``run_dir`` field: the core sets it to the run's directory, as an absolute path.
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar, NamedTuple

import numpy as np

from rlengine.api.data import Nest, TimeStep
from rlengine.api.noconfig import NoConfig


class FrameStack(NamedTuple):
    """An observation leaf that holds the last ``frames`` frames along ``axis``, the newest last.

    At an episode's first step every slot holds its first frame. Replay then
    stores each frame once and stacks them again when it samples.
    """

    axis: int
    frames: int


class EnvironmentCopies:
    """What both kinds of environment keep and declare: the copies they step and the specs of one copy.

    :class:`Environment` (Python) and :class:`~rlengine.api.graph_environment.GraphEnvironment`
    (TensorFlow) build on it; a plugin subclasses one of those two, never this.

    ``super().__init__`` keeps ``self.env_id`` (the id the run names),
    ``self.num_envs`` (the copies this object steps), ``self.seed`` (this
    object's seed), ``self.first_env_id`` (the run-wide number of its first
    copy, for seeding each copy apart) and ``self.config`` (the instance of
    ``config_class`` from the environment's section).
    """

    config_class: ClassVar[type] = NoConfig

    def __init__(self, env_id: str, num_envs: int, seed: int = 0, first_env_id: int = 0, config: Any = None):
        self.env_id = env_id
        self.num_envs = num_envs
        self.seed = seed
        self.first_env_id = first_env_id
        self.config = config

    @property
    def batch_size(self) -> int:
        return self.num_envs

    @functools.cached_property
    def copy_ids(self) -> np.ndarray:
        """``first_env_id .. first_env_id + num_envs - 1`` as a read-only int32 array: the ``env_id`` of every
        time step this object returns (one array, shared by them all)."""
        ids = np.arange(self.first_env_id, self.first_env_id + self.num_envs, dtype=np.int32)
        ids.flags.writeable = False
        return ids

    def time_step_spec(self) -> TimeStep:
        """TimeStep of ``tf.TensorSpec`` nests for one copy (no batch dimension)."""
        raise NotImplementedError

    def action_spec(self) -> Nest:
        """Nest of ``tf.TensorSpec`` (``BoundedTensorSpec`` for bounded actions), for one copy."""
        raise NotImplementedError


class Environment(EnvironmentCopies):
    """Base class of every environment plugin (batched, numpy in and out).

    Two optional attributes add episode metrics (API 1.9). They are not defined here, so that a
    wrapper forwarding unknown attributes (the core's restart guard) passes them on; set them on
    the instance or the class:

    - ``row_groups``: a list of ``num_envs`` names, the group each row's episodes are counted in,
      e.g. the agent a row plays when the rows are agents. Each episode then also counts in
      ``train/<group>/episode_return`` and ``eval/<group>/average_return``. A row whose episodes
      count in several groups names them in a tuple (API 1.10), e.g. ``("player_0", "vs_random")``.
    - ``episode_outcomes = True``: the sign of an episode's last reward is its outcome, a win (> 0),
      a draw (0) or a loss (< 0): ``train/win_rate``, ``train/draw_rate`` and ``train/loss_rate``
      (``eval/`` too, and per group) report their shares of the episodes.
    """

    def __init__(self, env_id: str, num_envs: int, seed: int, first_env_id: int = 0, config: Any = None):
        super().__init__(env_id, num_envs, seed, first_env_id, config)

    def reset(self) -> TimeStep:
        """Start every copy afresh; returns FIRST steps."""
        raise NotImplementedError

    def step(self, action: Nest) -> TimeStep:
        """Apply one action per copy; returns the next time steps."""
        raise NotImplementedError

    def stacked_frames(self) -> Nest:
        """Which observation leaves are frame stacks: a nest like the observation spec, of
        :class:`FrameStack` or ``None`` per leaf; or ``None`` for no stack at all (the default).

        Optional: it only saves replay memory (a stacked frame is stored once, not ``frames`` times).
        """
        return None

    def render(self) -> Any:
        """An RGB frame (H, W, 3) uint8 of the first copy, where supported.

        ``rlengine play --record`` calls it after every step. An environment
        that must know at construction that it will render declares a
        ``render_mode`` field in its config class: the core then builds it with
        ``render_mode = "rgb_array"`` (the ``[gym]`` section has that key).
        """
        raise NotImplementedError(f"{type(self).__name__} cannot render")

    def state(self) -> bytes:
        """Everything needed to continue every copy exactly (episodes in progress, random state).

        Optional: checkpoints store it so a resumed run continues the same
        episodes. The default raises ``NotImplementedError`` (not supported):
        a resumed run then starts new episodes.
        """
        raise NotImplementedError(f"{type(self).__name__} cannot save its state")

    def restore_state(self, state: bytes) -> None:
        """Continue from what :meth:`state` returned (same config); optional like it."""
        raise NotImplementedError(f"{type(self).__name__} cannot restore its state")

    def close(self) -> None:
        """Release processes and resources. Safe to call twice."""
