"""``GymEnvironment``: any Gymnasium environment as a batched rlengine environment.

The copies run in one Gymnasium vector env (which kind: :mod:`rlengine_gym.vector_envs`) with
the ``NEXT_STEP`` autoreset mode: the step after a copy's ``LAST`` step ignores its action and
returns the first observation of the next episode with reward 0, which is exactly rlengine's
``FIRST`` step. Nothing is lost across episode boundaries.

Seeding: the first ``reset`` seeds copy ``i`` with ``seed + first_env_id + i`` (a native vector
env, its one generator with ``seed + first_env_id``), so copies are distinct across all
environments of a run (their ``env_id`` values differ) and a run is reproducible; later resets
continue the random streams instead of replaying the same episodes.

How an id resolves to a Gymnasium spec is :mod:`rlengine_gym.env_ids`; how the worker
processes of the async vectorization start is :mod:`rlengine_gym.worker_start`.
"""

from __future__ import annotations

import functools
import multiprocessing
import pickle
from collections.abc import Mapping
from typing import Any, Optional

import gymnasium
import numpy as np
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv

from rlengine import ConfigError, Environment, FrameStack, StepType, TimeStep
from rlengine_gym import spaces as space_utils
from rlengine_gym import test_envs  # noqa: F401  (registers the rlengine/* ids in this process)
from rlengine_gym.atari import make_atari_env
from rlengine_gym.config import GymConfig, atari_settings
from rlengine_gym.env_ids import resolve_env_id
from rlengine_gym.native import autoreset_mode, native_state, step_then_reset
from rlengine_gym.vector_envs import choose_vectorization, make_vector_env
from rlengine_gym.worker import make_env
from rlengine_gym.worker_faults import terminate_workers, worker_faults
from rlengine_gym.worker_start import picklable

__all__ = ["GymConfig", "GymEnvironment", "make_env"]

_FIRST = np.int32(StepType.FIRST)
_MID = np.int32(StepType.MID)


class GymEnvironment(Environment):
    """A batch of ``num_envs`` copies of a Gymnasium environment.

    ``env_id`` is any registered Gymnasium id, optionally ``module:Name-v0``
    to import ``module`` first. Observations and actions follow the specs of
    :mod:`rlengine_gym.spaces`.
    """

    config_class = GymConfig

    def __init__(self, env_id: str, num_envs: int, seed: int, first_env_id: int = 0, config: Any = None):
        if config is None:
            config = GymConfig()
        elif isinstance(config, Mapping):
            try:
                config = GymConfig(**config)
            except (TypeError, ValueError) as err:
                raise ConfigError(f"[gym] {err}") from None
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ConfigError(f"num_envs must be a positive integer, got {num_envs!r}")
        super().__init__(env_id, int(num_envs), seed, int(first_env_id), config)
        self._venv = None
        self._was_last = None  # bool [B]: copy ended its episode on the previous step
        self._seeded = False
        self._hung = False  # a worker did not answer in time: close by terminating the processes
        self._broken = False  # a worker died: close by terminating the others, without waiting for it
        self.last_info: dict = {}

        spec = resolve_env_id(env_id, legacy=config.legacy)
        kwargs = dict(config.make_kwargs)
        if config.max_episode_steps is not None:
            kwargs["max_episode_steps"] = int(config.max_episode_steps)
        if config.render_mode is not None:
            kwargs["render_mode"] = config.render_mode
        atari = atari_settings(config, env_id, spec)
        stack = atari.frame_stack if atari is not None else 1
        self._stacked_frames = FrameStack(axis=-1, frames=stack) if stack > 1 else None
        spec_arg = spec if picklable(spec) else None
        if atari is None:
            thunk = functools.partial(make_env, env_id, spec_arg, kwargs)
        else:
            thunk = functools.partial(make_atari_env, env_id, spec_arg, kwargs, atari)
        self.vectorization = choose_vectorization(env_id, spec, config, kwargs, atari is not None)
        self._venv = make_vector_env(env_id, spec, thunk, self.num_envs, kwargs, self.vectorization)
        self._disabled_autoreset = (self.vectorization == "native"
                                    and autoreset_mode(self._venv) == AutoresetMode.DISABLED)
        try:
            self._build_specs()
        except BaseException:
            self.close()
            raise

    def _build_specs(self) -> None:
        env_id, batch = self.env_id, self.num_envs
        obs_space = self._venv.single_observation_space
        act_space = self._venv.single_action_space
        self.observation_space, self.action_space = obs_space, act_space
        self._observation_spec = space_utils.observation_spec(obs_space, env_id)
        self._action_spec = space_utils.action_spec(act_space, env_id)
        self._time_step_spec = TimeStep.spec_of(self._observation_spec, self._action_spec)
        # Hot-path helpers, built once.
        self._convert_obs = space_utils.observation_converter(obs_space)
        self._action_to_spec = space_utils.action_to_spec_dtypes(act_space, batch, env_id)
        self._action_to_gym = space_utils.action_to_gym(act_space)
        self._action_is_leaf = not isinstance(act_space, (gymnasium.spaces.Dict, gymnasium.spaces.Tuple))

    # -- Environment interface ------------------------------------------------
    def time_step_spec(self) -> TimeStep:
        return self._time_step_spec

    def action_spec(self) -> Any:
        return self._action_spec

    def stacked_frames(self) -> Any:
        """``FrameStack(-1, atari_frame_stack)`` for preprocessed Atari frames, else ``None``."""
        return self._stacked_frames

    def reset(self) -> TimeStep:
        venv = self._live_venv()
        seeds = None
        if not self._seeded and self.seed is not None:
            base = int(self.seed) + self.first_env_id
            seeds = base if self.vectorization == "native" else [base + i for i in range(self.num_envs)]
            venv.action_space.seed(base)
            venv.single_action_space.seed(base)
            if isinstance(venv, SyncVectorEnv):
                for i, env in enumerate(venv.envs):
                    env.action_space.seed(base + i)
        self._seeded = True
        obs, self.last_info = self._reset_venv(venv, seeds)
        batch = self.num_envs
        self._was_last = np.zeros(batch, dtype=bool)
        return TimeStep(
            step_type=np.full(batch, StepType.FIRST, dtype=np.int32),
            reward=np.zeros(batch, dtype=np.float32),
            discount=np.ones(batch, dtype=np.float32),
            observation=self._convert_obs(obs),
            prev_action=space_utils.zeros_like_spec(self._action_spec, batch),
            env_id=self.copy_ids,
        )

    def step(self, action: Any) -> TimeStep:
        was_last = self._was_last
        if was_last is None:
            raise RuntimeError(f"{type(self).__name__}.step() called before reset() or after close()")
        prev_action = self._action_to_spec(action)  # a fresh copy in spec dtypes
        obs, reward, terminated, truncated, self.last_info = self._step_venv(self._action_to_gym(prev_action))
        done = terminated | truncated
        step_type = done + _MID  # int32, MID = 1, LAST = 2: one NumPy call, where astype and += were two
        reward = reward.astype(np.float32)
        if np.count_nonzero(was_last):  # a quarter of what .any() costs on a small array
            # NEXT_STEP autoreset: these copies ignored the action and restarted.
            step_type[was_last] = _FIRST
            reward[was_last] = 0.0
            if self._action_is_leaf:
                prev_action[was_last] = 0
            else:
                for leaf in space_utils.leaves(prev_action):
                    leaf[was_last] = 0
        self._was_last = done
        return TimeStep(
            step_type=step_type,
            reward=reward,
            discount=(~terminated).astype(np.float32),
            observation=self._convert_obs(obs),
            prev_action=prev_action,
            env_id=self.copy_ids,
        )

    def state(self) -> bytes:
        """The copies' whole state (episodes in progress, random generators), pickled; sync and native.

        Worker processes of ``vectorization = "async"`` keep their envs to
        themselves, so there a resumed run starts new episodes instead.
        """
        venv = self._live_venv()
        if self.vectorization == "native":
            return pickle.dumps({"venv": native_state(venv, self.env_id), "was_last": self._was_last,
                                 "seeded": self._seeded, "copies": self.num_envs})
        if not isinstance(venv, SyncVectorEnv):
            raise NotImplementedError(f'{self.env_id!r}: environment state is not saved with vectorization = "async"')
        return pickle.dumps({
            "envs": venv.envs, "autoreset": venv._autoreset_envs, "was_last": self._was_last,
            "seeded": self._seeded, "action_spaces": (venv.action_space, venv.single_action_space),
            "copies": self.num_envs,
        })

    def restore_state(self, state: bytes) -> None:
        """Continue from what :meth:`state` returned (in a run built with the same config)."""
        venv = self._live_venv()
        saved = pickle.loads(state)
        if ("venv" in saved) != (self.vectorization == "native") or isinstance(venv, AsyncVectorEnv):
            raise NotImplementedError(f"{self.env_id!r}: the saved state is of another vectorization than "
                                      f"{self.vectorization!r}")
        copies = _saved_copies(saved)
        if copies is not None and copies != self.num_envs:
            raise ConfigError(f"{self.env_id!r}: the saved state holds {copies} copies, this run "
                              f"has num_envs = {self.num_envs}")
        if "venv" in saved:
            venv.close()
            self._venv = pickle.loads(saved["venv"])
        else:
            for env in venv.envs:
                env.close()
            venv.envs = saved["envs"]
            venv._autoreset_envs = saved["autoreset"]
            venv.action_space, venv.single_action_space = saved["action_spaces"]
        self._was_last, self._seeded = saved["was_last"], saved["seeded"]

    def render(self) -> Any:
        venv = self._live_venv()
        if self.config.render_mode is None:
            raise ConfigError(f'cannot render {self.env_id!r}: set render_mode = "rgb_array" in the [gym] section')
        if isinstance(venv, SyncVectorEnv):
            return venv.envs[0].render()
        if self.vectorization == "native":
            return venv.render()[0]
        return venv.call("render")[0]

    def close(self) -> None:
        venv, self._venv = self._venv, None
        self._was_last = None
        if venv is not None and self._broken:
            terminate_workers(venv)
        elif isinstance(venv, AsyncVectorEnv):
            venv.close(terminate=self._hung)  # a hung worker would never answer a polite close
        elif venv is not None:
            venv.close()

    # -- timeouts (async vectorization: the worker processes are waited for with a timeout) ----
    #: Seconds ``step``/``reset`` may take in the worker processes (0: no limit). The engine sets
    #: it; a call that exceeds it raises ``TimeoutError`` naming the id.
    step_timeout: float = 0.0

    @property
    def handles_step_timeout(self) -> bool:
        """Whether this env enforces ``step_timeout`` itself (only worker processes can be waited for)."""
        return self.vectorization == "async"

    def _step_venv(self, action: Any) -> tuple:
        venv = self._venv
        if self._disabled_autoreset:
            return step_then_reset(venv, action, self._was_last)
        if not isinstance(venv, AsyncVectorEnv):
            return venv.step(action)
        with self._worker_faults(venv):
            venv.step_async(action)
            return self._wait(venv.step_wait, "step")

    def _reset_venv(self, venv: Any, seeds: Any) -> tuple:
        if not isinstance(venv, AsyncVectorEnv):
            return venv.reset(seed=seeds)
        with self._worker_faults(venv):
            venv.reset_async(seed=seeds)
            return self._wait(venv.reset_wait, "reset")

    def _worker_faults(self, venv: AsyncVectorEnv) -> Any:
        """A worker that died becomes one error naming it and its signal (the fault guard restarts us)."""
        return worker_faults(venv, self.env_id, self.first_env_id, lambda: setattr(self, "_broken", True))

    def _wait(self, wait: Any, what: str) -> tuple:
        try:
            return wait(timeout=self.step_timeout or None)  # 0: no limit
        except multiprocessing.TimeoutError:
            self._hung = True
            raise TimeoutError(f"{self.env_id!r}: worker processes did not answer {what}() within "
                               f"{self.step_timeout:g} s") from None

    def _live_venv(self):
        if self._venv is None:
            raise RuntimeError(f"{type(self).__name__} for {self.env_id!r} is closed")
        return self._venv

    def __enter__(self) -> "GymEnvironment":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"GymEnvironment({self.env_id!r}, num_envs={self.num_envs}, seed={self.seed}, "
            f"first_env_id={self.first_env_id}, vectorization={self.vectorization!r})"
        )


def _saved_copies(saved: dict) -> Optional[int]:
    """The number of copies a saved state holds, None if it cannot tell. A copy set never stepped (an
    evaluation environment checkpointed before its first evaluation) has no ``was_last`` yet; states saved
    before ``copies`` was kept tell it by their ``envs`` (sync) or ``was_last``."""
    if "copies" in saved:
        return saved["copies"]
    if "envs" in saved:
        return len(saved["envs"])
    return None if saved["was_last"] is None else len(saved["was_last"])
