"""The Atari wrappers that Gymnasium's ``AtariPreprocessing`` leaves out.

``AtariPreprocessing`` does the no-op starts, frame skipping with max-pooling,
resizing and grayscale. What DQN-style training adds on top lives here:
a lost life as the end of a training episode without restarting the game,
pressing FIRE to start play, reward clipping and a channels-last frame stack.

Like :mod:`rlengine_gym.worker`, this module imports neither TensorFlow nor
rlengine: worker processes of the async vectorization build these wrappers.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import gymnasium
import numpy as np
from gymnasium.spaces import Box

__all__ = ["FireOnReset", "LifeLossEpisodes", "PicklableGame", "SignRewards", "StackFrames", "fire_action"]


def _ale(env: gymnasium.Env) -> Any:
    return env.unwrapped.ale


class PicklableGame(gymnasium.Wrapper):
    """Pickles the game in progress, so a sync run's checkpoint resumes it exactly.

    ale-py's env alone pickles as the arguments it was made with: unpickled,
    it is a freshly started emulator, out of step with the wrappers' state.
    This keeps the emulator's state (its random generator too, for sticky
    actions) and the env's generator (no-op counts).
    """

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_game"] = _ale(self.env).cloneState(include_rng=True).serialize()
        state["_np_random"] = self.env.unwrapped.np_random
        return state

    def __setstate__(self, state: dict) -> None:
        import ale_py  # only unpickled where the env itself was

        state = dict(state)
        game, np_random = state.pop("_game"), state.pop("_np_random")
        self.__dict__.update(state)
        _ale(self.env).restoreState(ale_py.ALEState(game))
        self.env.unwrapped.np_random = np_random


class LifeLossEpisodes(gymnasium.Wrapper):
    """A lost life terminates the episode, but the next ``reset`` goes on with the same game.

    Value bootstrapping then sees a life's end as a real end, which speeds up
    learning, while the agent still plays whole games: only when the game is
    really over (or truncated, or a seed is given) does ``reset`` restart it.
    Losing the last life is the game's own termination, not a life loss.
    """

    def __init__(self, env: gymnasium.Env):
        super().__init__(env)
        self._lives = 0
        self._game_over = True

    def step(self, action: Any) -> tuple:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._game_over = terminated or truncated
        lives = _ale(self.env).lives()
        if 0 < lives < self._lives:
            terminated = True
        self._lives = lives
        return obs, reward, terminated, truncated, info

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple:
        if self._game_over or seed is not None:
            obs, info = self.env.reset(seed=seed, options=options)
        else:
            # One no-op step moves past the frame where the life was lost.
            obs, _, terminated, truncated, info = self.env.step(0)
            if terminated or truncated:
                obs, info = self.env.reset(options=options)
        self._game_over = False
        self._lives = _ale(self.env).lives()
        return obs, info


class FireOnReset(gymnasium.Wrapper):
    """Presses FIRE once after every reset: games such as Breakout wait for it before play starts.

    With ``after_life_loss`` (whole games, no :class:`LifeLossEpisodes` below)
    it also presses FIRE when a life is lost, within that step: a policy
    trained on one life per episode, each begun by this wrapper's FIRE, never
    learned to relaunch play and would otherwise stall the game until its
    frame limit. Only wrap games whose action set has FIRE (see :func:`fire_action`).
    """

    def __init__(self, env: gymnasium.Env, fire: int, after_life_loss: bool = False):
        super().__init__(env)
        self._fire = fire
        self._after_life_loss = after_life_loss
        self._lives = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple:
        self.env.reset(seed=seed, options=options)
        obs, _, terminated, truncated, info = self.env.step(self._fire)
        if terminated or truncated:  # very rare: the FIRE step itself ended the episode
            obs, info = self.env.reset(options=options)
        self._lives = _ale(self.env).lives()
        return obs, info

    def step(self, action: Any) -> tuple:
        obs, reward, terminated, truncated, info = self.env.step(action)
        if self._after_life_loss and not (terminated or truncated) and _ale(self.env).lives() < self._lives:
            obs, more, terminated, truncated, info = self.env.step(self._fire)
            reward += more
        self._lives = _ale(self.env).lives()
        return obs, reward, terminated, truncated, info


def fire_action(env: gymnasium.Env) -> int | None:
    """The index of FIRE in the game's action set, or ``None`` when it has none."""
    meanings = env.unwrapped.get_action_meanings()
    return meanings.index("FIRE") if "FIRE" in meanings else None


class SignRewards(gymnasium.RewardWrapper):
    """Rewards become -1, 0 or +1, so one learning rate suits every game's score scale."""

    def reward(self, reward: Any) -> float:
        return float(np.sign(reward))


class StackFrames(gymnasium.ObservationWrapper):
    """The last ``frames`` observations side by side along a last (channel) axis, the newest last.

    A ``[H, W]`` frame gives ``[H, W, frames]``, a ``[H, W, C]`` frame
    ``[H, W, C * frames]``. After a reset every slot holds the first frame,
    as :class:`rlengine.FrameStack` declares.
    """

    def __init__(self, env: gymnasium.Env, frames: int):
        super().__init__(env)
        space = env.observation_space
        shape = tuple(space.shape) if len(space.shape) == 3 else tuple(space.shape) + (1,)
        self._frames: deque = deque(maxlen=frames)
        self.observation_space = Box(0, 255, shape[:-1] + (shape[-1] * frames,), space.dtype)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple:
        obs, info = self.env.reset(seed=seed, options=options)
        self._frames.extend([self._as_3d(obs)] * self._frames.maxlen)
        return self._stacked(), info

    def observation(self, observation: Any) -> np.ndarray:
        self._frames.append(self._as_3d(observation))
        return self._stacked()

    def _stacked(self) -> np.ndarray:
        # Joining whole frames beats shifting a channels-last buffer in place (strided, overlapping copies).
        return np.concatenate(self._frames, axis=-1)

    @staticmethod
    def _as_3d(frame: np.ndarray) -> np.ndarray:
        # AtariPreprocessing returns a new array per step, so keeping it (not a copy) is safe.
        return frame[..., None] if frame.ndim == 2 else frame
