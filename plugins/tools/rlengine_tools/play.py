"""``rlengine play``: watch the greedy policy of one of a run's checkpoints, optionally recorded.

One environment copy plays ``episodes`` episodes with the evaluator's
greedy step (transformers applied without updating statistics, actions
clipped to their bounds). With a recording path, a frame is rendered after
every step and written as a GIF (Pillow) or an MP4 (imageio-ffmpeg).
"""

from __future__ import annotations

import os
from typing import Any, Callable, Optional

import attrs
import numpy as np
import tensorflow as tf

from rlengine import RLEngineError
from rlengine.api import StepType
from rlengine.collect.policy_step import greedy
from rlengine.collect.stepper import stepper_for

RECORD_FORMATS = (".gif", ".mp4")


@attrs.frozen
class Episode:
    """One played episode."""

    episode_return: float
    length: int


def check_record_path(path: Optional[str]) -> None:
    """Refuse an unknown extension before anything is built (training a policy can take a while)."""
    if path is None:
        return
    ext = os.path.splitext(path)[1].lower()
    if ext not in RECORD_FORMATS:
        raise RLEngineError(f"cannot record to {path!r}: unknown extension {ext or '(none)'!r}; "
                            f"use a file name ending in .gif or .mp4")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise RLEngineError(f"cannot record to {path!r}: directory {parent!r} does not exist; create it first")


def render_frame(render: Callable[[], Any], env_name: str) -> np.ndarray:
    """An ``(H, W, 3)`` uint8 frame of the first copy (``render()``), or a one-line error naming the environment.

    ``env_name`` names it for the user, e.g. ``'CartPole-v1' (GymEnvironment)``.
    """
    try:
        frame = render()
    except NotImplementedError:
        raise RLEngineError(f"environment {env_name} cannot render frames; play it without --record") from None
    if frame is None:
        raise RLEngineError(f"environment {env_name} returned no frame from render(); it must return an "
                            "RGB array (Gymnasium: render_mode = \"rgb_array\"); play it without --record")
    frame = np.asarray(frame)
    if frame.ndim != 3 or frame.shape[-1] not in (3, 4):
        raise RLEngineError(f"environment {env_name} rendered an array of shape {frame.shape}, not an RGB "
                            "image (H, W, 3); play it without --record")
    return frame[..., :3].astype(np.uint8)


def play_episodes(components: Any, num_episodes: int, env_name: str, record: bool = False,
                  on_episode: Optional[Callable[[int, Episode], None]] = None) -> tuple[list, list]:
    """Play ``num_episodes`` greedy episodes in the evaluation env's first copy.

    Returns ``(episodes, frames)``; ``frames`` is empty unless ``record``.
    ``on_episode(index, episode)`` is called as each episode ends.
    """
    env = components.eval_env
    batch = env.batch_size
    act = greedy_step(components.chain, components.algorithm, batch)
    stepper = stepper_for(env, env.time_step_spec())  # a Python or a graph environment alike
    env_state, raw = stepper.reset()
    t_state, p_state = components.chain.initial_state(batch), components.algorithm.initial_state(batch)

    def render() -> Any:  # a graph environment renders from its state
        return env.render() if stepper.calls_python else env.render(env_state)

    frames = [render_frame(render, env_name)] if record else []
    episodes: list = []
    episode_return, length = 0.0, 0
    while len(episodes) < num_episodes:
        action, t_state, p_state = act(raw, t_state, p_state)
        env_state, raw = stepper.step(env_state, action)
        if record:
            frames.append(render_frame(render, env_name))
        if raw.step_type[0] == StepType.FIRST:  # the step after LAST only restarts the copy
            continue
        episode_return += float(raw.reward[0])
        length += 1
        if raw.step_type[0] == StepType.LAST:
            episodes.append(Episode(episode_return, length))
            if on_episode is not None:
                on_episode(len(episodes) - 1, episodes[-1])
            episode_return, length = 0.0, 0
    return episodes, frames


def greedy_step(chain: Any, algorithm: Any, batch: int) -> Callable:
    """Evaluation's greedy step as one graph: ``act(raw, transformer_state, policy_state)``."""

    def act(raw, transformer_state, policy_state):
        return greedy(chain, algorithm, raw, transformer_state, policy_state, batch)

    return tf.function(act, autograph=False)


def write_video(path: str, frames: list, fps: int) -> None:
    """Write ``frames`` to ``path`` (.gif or .mp4), importing the writer only now."""
    check_record_path(path)
    try:
        import imageio.v2 as imageio
    except ImportError:
        raise RLEngineError("recording needs imageio: pip install rlengine-tools") from None
    if path.lower().endswith(".gif"):
        # duration is per frame in milliseconds; loop=0 repeats for ever.
        imageio.mimsave(path, frames, duration=1000.0 / fps, loop=0)
        return
    try:
        import imageio_ffmpeg  # noqa: F401  (imageio finds ffmpeg through it)
    except ImportError:
        raise RLEngineError("recording .mp4 needs imageio-ffmpeg: pip install rlengine-tools") from None
    # Most players need even frame sizes for H.264; pad by at most one pixel each way.
    frames = [_even_size(f) for f in frames]
    imageio.mimsave(path, frames, fps=fps, macro_block_size=1)


def _even_size(frame: np.ndarray) -> np.ndarray:
    h, w = frame.shape[:2]
    return np.pad(frame, ((0, h % 2), (0, w % 2), (0, 0)), mode="edge")


def play_run(root_dir: str, num_episodes: int = 1, record: Optional[str] = None, fps: int = 30,
             overrides: Any = (), on_episode: Optional[Callable[[int, Episode], None]] = None,
             checkpoint: str = "latest", on_checkpoint: Optional[Callable[[dict], None]] = None,
             **engine_kwargs: Any) -> list:
    """Open ``root_dir``, play ``num_episodes`` greedy episodes, and record them if asked.

    ``checkpoint``: ``"latest"`` (the newest), ``"best"`` or an iteration
    number; ``on_checkpoint(summary)`` is called once it is restored, with
    :func:`rlengine_tools.rundir.checkpoint_summary`. Returns the list of :class:`Episode`.
    """
    from rlengine_tools.rundir import (
        checked_checkpoint,
        checkpoint_summary,
        enable_rendering,
        open_run,
        single_copy_overrides,
    )

    if num_episodes < 1:
        raise RLEngineError(f"--episodes must be at least 1, got {num_episodes}")
    if fps < 1:
        raise RLEngineError(f"--fps must be at least 1, got {fps}")
    check_record_path(record)
    choice = checked_checkpoint(checkpoint)
    engine = open_run(root_dir, [*single_copy_overrides(), *overrides], command="play", **engine_kwargs)
    if record:
        enable_rendering(engine)
    env_name = f"{engine.config.train.env!r} ({engine.environment_section()[1].__name__})"
    with engine.restored(choice) as components:
        if on_checkpoint is not None:
            on_checkpoint(checkpoint_summary(engine.newest_checkpoint()))
        episodes, frames = play_episodes(components, num_episodes, env_name, bool(record), on_episode)
    if record:
        write_video(record, frames, fps)
    return episodes
