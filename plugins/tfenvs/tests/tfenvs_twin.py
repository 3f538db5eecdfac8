"""The exactness recipe: a graph environment and its Gymnasium original, stepped side by side.

The graph env runs its copies for ``steps`` steps in one compiled ``tf.while_loop``, choosing
actions with a policy written in TensorFlow and recording everything. Then each copy is replayed
in ``gymnasium.make(its id)``: every episode starts from the state the graph env drew (copied into
the Gymnasium env's ``unwrapped.state``, in the dtype Gymnasium's own code leaves there), takes
the recorded actions, and must give the same observations (to ``tolerance``), rewards,
terminations, truncations and episode lengths, step by step.

``resync="step"`` copies the graph env's state into Gymnasium before every step, not only at
episode starts. CartPole and Acrobot need it: their open-loop dynamics are unstable (chaotic for
Acrobot), so a difference of one unit in the last place, which TensorFlow's graph optimizer
(constant folding, reassociation) and XLA (fused multiply-adds) introduce, grows past 1e-5 within
a few hundred steps of an episode, as it would between two numpy builds.
"""

from __future__ import annotations

from typing import Callable

import gymnasium
import numpy as np
import tensorflow as tf

from rlengine import StepType


def rollout(graph_env, policy: Callable, steps: int, seed: int, jit_compile: bool = False) -> dict:
    """numpy arrays ``[steps + 1, B, ...]`` of the time steps, actions taken and states of ``graph_env``.

    ``policy(observation, uniform) -> action`` gets ``uniform``, ``float32 [B, 2]`` in [0, 1), drawn
    from the seed. Row 0 is the reset; ``action[t]`` is taken at row ``t``.
    """
    batch = graph_env.num_envs

    @tf.function(jit_compile=jit_compile)
    def run(seed):
        state, time_step = graph_env.reset(seed)
        uniform = tf.random.stateless_uniform([steps + 1, batch, 2], seed + 1, alg="philox")
        rows = {name: tf.TensorArray(getattr(time_step, name).dtype, steps + 1)
                for name in ("step_type", "reward", "discount", "observation")}
        rows.update(physics=tf.TensorArray(tf.float64, steps + 1), elapsed=tf.TensorArray(tf.int32, steps + 1),
                    action=tf.TensorArray(graph_env.action_spec().dtype, steps + 1))

        def body(t, state, time_step, rows):
            action = policy(time_step.observation, uniform[t])
            written = {name: rows[name].write(t, getattr(time_step, name))
                       for name in ("step_type", "reward", "discount", "observation")}
            written.update(physics=rows["physics"].write(t, state["physics"]),
                           elapsed=rows["elapsed"].write(t, state["elapsed"]), action=rows["action"].write(t, action))
            state, time_step = graph_env.step(state, action)
            return t + 1, state, time_step, written

        _, state, time_step, rows = tf.while_loop(lambda t, *_: t < steps + 1, body, (0, state, time_step, rows))
        return {name: array.stack() for name, array in rows.items()}

    return {name: value.numpy() for name, value in run(tf.constant([seed, 0], tf.int32)).items()}


def copy_state_into(gym_env: gymnasium.Env, physics: np.ndarray, first: bool) -> None:
    """Put one copy's physics into the Gymnasium env, in the dtype Gymnasium's own code leaves there.

    ``first``: at the start of an episode (as ``reset`` leaves it), else mid-episode (as ``step`` does).
    """
    unwrapped = gym_env.unwrapped
    float32 = {"Acrobot-v1": first, "MountainCarContinuous-v0": not first}.get(unwrapped.spec.id, False)
    unwrapped.state = np.array(physics, dtype=np.float32 if float32 else np.float64)


def observation_of(gym_env: gymnasium.Env) -> np.ndarray:
    """The observation Gymnasium would return for the state just copied into it."""
    unwrapped = gym_env.unwrapped
    for method in ("_get_obs", "_get_ob"):
        if hasattr(unwrapped, method):
            return getattr(unwrapped, method)()
    return np.array(unwrapped.state, dtype=np.float32)


def replay_in_gymnasium(graph_env, rows: dict, copy: int, tolerance: float = 1e-5, resync: str = "episode") -> dict:
    """Replay copy ``copy`` of ``rows`` in Gymnasium; fail on the first disagreement, else return figures."""
    gym_env = gymnasium.make(graph_env.twin_of)
    gym_env.reset(seed=copy)
    worst, lengths, length, terminations, truncations = 0.0, [], 0, 0, 0
    gym_obs = None
    for t in range(len(rows["step_type"])):
        step_type, where = int(rows["step_type"][t, copy]), f"{graph_env.env_id} copy {copy} step {t}"
        if step_type == StepType.FIRST:  # a new episode: Gymnasium resets, then takes the graph env's state
            if t:
                lengths.append(length)
            length = 0
            gym_env.reset()
            copy_state_into(gym_env, rows["physics"][t, copy], first=True)
            gym_obs = observation_of(gym_env)
        else:
            if resync == "step":
                copy_state_into(gym_env, rows["physics"][t - 1, copy], first=rows["elapsed"][t - 1, copy] == 0)
            gym_obs, reward, terminated, truncated, _ = gym_env.step(_gym_action(rows["action"][t - 1, copy]))
            length += 1
            terminations, truncations = terminations + terminated, truncations + truncated
            graph_terminated = rows["discount"][t, copy] == 0.0
            graph_truncated = step_type == StepType.LAST and rows["elapsed"][t, copy] >= graph_env.max_episode_steps
            assert rows["reward"][t, copy] == np.float32(reward), f"{where}: reward {rows['reward'][t, copy]} vs {reward}"
            assert graph_terminated == terminated, f"{where}: terminated {graph_terminated} vs {terminated}"
            assert graph_truncated == truncated, f"{where}: truncated {graph_truncated} vs {truncated}"
            assert (step_type == StepType.LAST) == (terminated or truncated), f"{where}: step type {step_type}"
        diff = float(np.max(np.abs(rows["observation"][t, copy] - gym_obs)))
        assert diff <= tolerance, f"{where}: observations differ by {diff:.3g}"
        worst = max(worst, diff)
    gym_env.close()
    return {"max_abs_diff": worst, "episodes": len(lengths), "terminations": terminations,
            "truncations": truncations, "lengths": lengths}


def _gym_action(action: np.ndarray):
    return int(action) if action.ndim == 0 else action.astype(np.float32)
