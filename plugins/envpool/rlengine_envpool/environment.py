"""``EnvPoolEnvironment``: an EnvPool task's copies as one batched rlengine environment.

The copies step in EnvPool's C++ threads (``[envpool] num_threads``), synchronously: every ``step`` sends
one action per copy and returns every copy's next time step, in copy order. EnvPool resets a copy on the
step after its last one, ignoring that step's action: that step is rlengine's ``FIRST`` (reward 0,
discount 1, ``prev_action`` zeros), exactly as the Gymnasium path's ``NEXT_STEP`` autoreset gives it.
``discount`` is 0 only when an episode terminated, not when its time limit truncated it.

Seeding: copy ``i`` is seeded with ``seed + first_env_id + i`` when the environment is made; later
resets continue each copy's random stream. EnvPool cannot save its copies' state, so a run resumed from
a checkpoint starts new episodes (said once, when the first checkpoint is written).

Atari tasks (``envpool/Pong-v5``) keep EnvPool's own preprocessing (no-op starts, frame skip 4,
84 x 84 gray frames, 4 stacked), channels last as the engine's image encoders expect. Training copies
lose an episode with each life and see the reward's sign (EnvPool's ``episodic_life`` and
``reward_clip``, as CleanRL's EnvPool scripts set them; ``make_kwargs`` may turn them off); evaluation
copies always play whole games with the raw score.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import numpy as np

from rlengine import ConfigError, Environment, FrameStack, SpecMismatchError, StepType, TimeStep
from rlengine_envpool import spaces
from rlengine_envpool.config import EnvPoolConfig, threads_for
from rlengine_envpool.task_ids import Task, resolve_task

__all__ = ["EnvPoolConfig", "EnvPoolEnvironment"]

_FIRST = np.int32(StepType.FIRST)
_MID = np.int32(StepType.MID)
_ATARI_TRAINING = {"episodic_life": True, "reward_clip": True}  # evaluation: both off, whatever make_kwargs say
_said_no_state: set = set()  # env ids whose missing state was already announced in this process


def make_kwargs(task: Task, config: EnvPoolConfig) -> dict:
    """Keyword arguments for ``make_gymnasium`` besides the copies, seeds and threads."""
    if not task.is_atari:
        return dict(config.make_kwargs)
    if config.evaluation:
        return {**config.make_kwargs, **{key: False for key in _ATARI_TRAINING}}
    return {**_ATARI_TRAINING, **config.make_kwargs}


def _config(config: Any) -> EnvPoolConfig:
    if config is None:
        return EnvPoolConfig()
    if isinstance(config, Mapping):
        try:
            return EnvPoolConfig(**config)
        except (TypeError, ValueError) as err:
            raise ConfigError(f"[envpool] {err}") from None
    return config


class EnvPoolEnvironment(Environment):
    """``num_envs`` copies of the EnvPool task ``env_id = "envpool/<task id>"`` in one EnvPool."""

    config_class = EnvPoolConfig

    def __init__(self, env_id: str, num_envs: int, seed: int, first_env_id: int = 0, config: Any = None):
        config = _config(config)
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ConfigError(f"num_envs must be a positive integer, got {num_envs!r}")
        super().__init__(env_id, int(num_envs), seed, int(first_env_id), config)
        self.task = resolve_task(env_id)
        self.num_threads = threads_for(config, self.num_envs)
        kwargs = make_kwargs(self.task, config)
        base = int(seed or 0) + self.first_env_id
        try:
            self._pool = self.task.envpool.make_gymnasium(
                self.task.name, num_envs=self.num_envs, seed=[base + i for i in range(self.num_envs)],
                num_threads=self.num_threads, **kwargs)
        except (TypeError, ValueError) as err:
            raise ConfigError(f"cannot make EnvPool task {self.task.name!r} with [envpool] make_kwargs {kwargs}: "
                              f"{err}") from None
        self._was_last: np.ndarray | None = None  # bool [B]: the copy's previous step was LAST
        self._build_specs()

    def _build_specs(self) -> None:
        obs_space, act_space = self._pool.observation_space, self._pool.action_space
        # Atari frames come stacked channels first, [frames, 84, 84]; the engine's are channels last.
        self._channels_last = self.task.is_atari and len(obs_space.shape) == 3
        shape = (*obs_space.shape[1:], obs_space.shape[0]) if self._channels_last else None
        self._observation_spec = spaces.observation_spec(obs_space, self.env_id, shape)
        self._action_spec = spaces.action_spec(act_space, self.env_id)
        self._obs_dtype = spaces.observation_dtype(obs_space)
        self._action_shape = (self.num_envs, *self._action_spec.shape)
        self._action_dtype = self._action_spec.dtype.as_numpy_dtype
        frames = obs_space.shape[0] if self._channels_last else 1
        self._stacked_frames = FrameStack(axis=-1, frames=frames) if frames > 1 else None
        self._time_step_spec = TimeStep.spec_of(self._observation_spec, self._action_spec)

    # -- Environment interface ------------------------------------------------
    def time_step_spec(self) -> TimeStep:
        return self._time_step_spec

    def action_spec(self) -> Any:
        return self._action_spec

    def stacked_frames(self) -> Any:
        """``FrameStack(-1, 4)`` for Atari's stacked frames, else ``None``."""
        return self._stacked_frames

    def reset(self) -> TimeStep:
        obs, _ = self._live_pool().reset()
        batch = self.num_envs
        self._was_last = np.zeros(batch, dtype=bool)
        return TimeStep(step_type=np.full(batch, _FIRST), reward=np.zeros(batch, np.float32),
                        discount=np.ones(batch, np.float32), observation=self._observation(obs, None),
                        prev_action=np.zeros(self._action_shape, self._action_dtype), env_id=self.copy_ids)

    def step(self, action: Any) -> TimeStep:
        was_last = self._was_last
        if was_last is None:
            raise RuntimeError(f"{type(self).__name__}.step() called before reset() or after close()")
        prev_action = np.array(action, dtype=self._action_dtype)  # a fresh copy: the time step keeps it
        if prev_action.shape != self._action_shape:
            raise SpecMismatchError(f"environment {self.env_id!r} expects actions of shape {self._action_shape}, "
                                    f"got shape {prev_action.shape}")
        obs, reward, terminated, truncated, _ = self._pool.step(prev_action)
        done = terminated | truncated
        step_type = done + _MID  # MID = 1, LAST = 2
        reward = reward.astype(np.float32)
        restarted = was_last if np.count_nonzero(was_last) else None
        if restarted is not None:  # EnvPool reset these copies and ignored their actions
            step_type[restarted] = _FIRST
            reward[restarted] = 0.0
            prev_action[restarted] = 0
        self._was_last = done
        return TimeStep(step_type=step_type, reward=reward, discount=(~terminated).astype(np.float32),
                        observation=self._observation(obs, restarted), prev_action=prev_action, env_id=self.copy_ids)

    def _observation(self, obs: np.ndarray, restarted: np.ndarray | None) -> np.ndarray:
        """Fresh arrays in the spec's dtype and layout; an episode's first frame fills its whole stack."""
        if not self._channels_last:
            return np.array(obs, dtype=self._obs_dtype)
        frames = np.ascontiguousarray(np.moveaxis(obs, 1, -1))
        if restarted is not None:  # a lost life restarts an episode mid-game, the old frames still stacked
            frames[restarted] = frames[restarted][..., -1:]
        return frames

    def state(self) -> bytes:
        """EnvPool cannot save its copies' state: a resumed run starts new episodes (said once per id)."""
        if self.env_id not in _said_no_state:
            _said_no_state.add(self.env_id)
            print(f"rlengine: note: EnvPool cannot save the state of the copies of {self.env_id!r}: a run resumed "
                  f"from these checkpoints starts new episodes", file=sys.stderr)
        raise NotImplementedError(f"{self.env_id!r}: EnvPool cannot save its environments' state")

    def close(self) -> None:
        pool, self._pool = getattr(self, "_pool", None), None
        self._was_last = None
        if pool is not None:
            pool.close()

    def _live_pool(self) -> Any:
        if self._pool is None:
            raise RuntimeError(f"{type(self).__name__} for {self.env_id!r} is closed")
        return self._pool

    def __enter__(self) -> "EnvPoolEnvironment":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"EnvPoolEnvironment({self.env_id!r}, num_envs={self.num_envs}, seed={self.seed}, "
                f"first_env_id={self.first_env_id}, num_threads={self.num_threads})")
