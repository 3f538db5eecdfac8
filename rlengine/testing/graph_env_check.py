"""``check_graph_environment``: run a graph environment against the contract of :class:`rlengine.GraphEnvironment`.

Every broken rule raises :class:`GraphEnvironmentCheckError` (an ``AssertionError``) with one line
naming the environment id and the rule, e.g. ``'tf/CartPole-v1': after LAST the next step must
be FIRST (copy 3, step 41)``. What is checked:

* the specs: a ``TimeStep`` of ``tf.TensorSpec`` (int32 step type and env id, float32 reward and
  discount, ``prev_action`` spec equal to ``action_spec()``), the state spec a nest of specs;
* ``reset`` and every ``step``: the structure, dtype and shape (batch first) of the time step and
  of the state against the specs, so the state keeps its shapes from step to step;
* the episodes: ``reset`` gives ``FIRST`` steps with reward 0, discount 1 and zero ``prev_action``;
  after ``LAST`` comes ``FIRST`` (reward 0, discount 1, zero ``prev_action``), ``FIRST`` only after
  ``LAST``, a discount of 0 only on ``LAST`` steps and of 0 or 1 everywhere;
  ``env_id`` is ``first_env_id + copy``;
* seeds: the same seed gives the same episodes, a different seed different ones;
* the graph: ``reset`` and ``steps`` steps trace into one ``tf.function`` around a ``tf.while_loop``
  (with ``jit_compile=True`` too when asked).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf

from rlengine.api.data import StepType, TimeStep

__all__ = ["GraphEnvironmentCheckError", "check_graph_environment"]


class GraphEnvironmentCheckError(AssertionError):
    """A graph environment broke a rule of the contract (one line: the env id and the rule)."""


def check_graph_environment(env: Any, steps: int = 300, seed: int = 0, jit_compile: bool = False,
                            random_episodes: bool = True) -> None:
    """Raise :class:`GraphEnvironmentCheckError` naming the first rule ``env`` breaks, else return.

    ``steps`` random actions (drawn from the action spec with ``seed``) are stepped one call at a
    time, then again in one ``tf.while_loop``; give enough for several episodes to end. With
    ``random_episodes`` (a task whose episodes the seed draws), two seeds must give different
    episodes; a deterministic task passes ``random_episodes=False``.
    """
    _Checker(env, steps, seed, jit_compile, random_episodes).run()


class _Checker:
    def __init__(self, env: Any, steps: int, seed: int, jit_compile: bool, random_episodes: bool):
        self.env, self.steps, self.seed, self.jit_compile = env, steps, seed, jit_compile
        self.random_episodes = random_episodes
        self.batch = env.num_envs
        self.env_ids = np.arange(env.first_env_id, env.first_env_id + self.batch, dtype=np.int32)

    def fail(self, rule: str) -> None:
        raise GraphEnvironmentCheckError(f"{self.env.env_id!r}: {rule}")

    def run(self) -> None:
        self.check_specs()
        step = tf.function(self.env.step)
        actions = self.random_actions()
        first = self.play(step, actions, self.seed, check=True)
        again = self.play(step, actions, self.seed, check=False)
        if not _nests_equal(first, again):
            self.fail("the same seed must give the same episodes (reset and steps differ between two runs)")
        if self.random_episodes:
            other = self.play(step, actions, self.seed + 1, check=False)
            if _nests_equal([t.observation for t in first], [t.observation for t in other]):
                self.fail("different seeds must give different episodes (the observations are the same; "
                          "a deterministic task passes random_episodes=False)")
        self.check_graph_loop(actions)

    # -- specs ---------------------------------------------------------------------------------
    def check_specs(self) -> None:
        spec = self.env.time_step_spec()
        if not isinstance(spec, TimeStep):
            self.fail(f"time_step_spec() must be a TimeStep, got {type(spec).__name__}")
        for name, dtype in (("step_type", tf.int32), ("reward", tf.float32), ("discount", tf.float32),
                            ("env_id", tf.int32)):
            leaf = getattr(spec, name)
            if not isinstance(leaf, tf.TensorSpec) or leaf.dtype != dtype or leaf.shape.rank != 0:
                self.fail(f"time_step_spec().{name} must be a scalar {dtype.name} TensorSpec, got {leaf}")
        try:
            tf.nest.assert_same_structure(spec.prev_action, self.env.action_spec())
            same = all(a == b for a, b in zip(tf.nest.flatten(spec.prev_action), tf.nest.flatten(self.env.action_spec())))
        except (TypeError, ValueError):
            same = False
        if not same:
            self.fail("time_step_spec().prev_action must equal action_spec()")
        for what, nest in (("observation", spec.observation), ("action_spec()", self.env.action_spec()),
                           ("state_spec()", self.env.state_spec())):
            if not all(isinstance(leaf, tf.TensorSpec) for leaf in tf.nest.flatten(nest)):
                self.fail(f"{what} must be a nest of tf.TensorSpec")

    def check_against_spec(self, what: str, value: Any, spec: Any, where: str) -> None:
        try:
            tf.nest.assert_same_structure(spec, value, expand_composites=False)
        except (TypeError, ValueError):
            self.fail(f"{what} must have the structure of its spec ({where})")
        for path, leaf_spec, leaf in zip(_paths(spec), tf.nest.flatten(spec), tf.nest.flatten(value)):
            shape = [self.batch, *leaf_spec.shape]
            if leaf.dtype != leaf_spec.dtype:
                self.fail(f"{what}{path} must be {leaf_spec.dtype.name} as its spec says, got {leaf.dtype.name} ({where})")
            if list(leaf.shape) != shape:
                self.fail(f"{what}{path} must have shape {shape} (batch, then its spec's), got {list(leaf.shape)} ({where})")

    # -- episodes ------------------------------------------------------------------------------
    def random_actions(self) -> list:
        rng = np.random.default_rng(self.seed)
        return [tf.nest.map_structure(lambda s: _random_leaf(rng, s, self.batch), self.env.action_spec())
                for _ in range(self.steps)]

    def play(self, step: Any, actions: list, seed: int, check: bool) -> list:
        state, time_step = self.env.reset(tf.constant([seed, 0], tf.int32))
        steps = [self.check_step(state, time_step, None, "reset") if check else _numpy(time_step)]
        for t, action in enumerate(actions, 1):
            try:
                state, time_step = step(state, action)
            except Exception as err:  # noqa: BLE001  (any failure to trace or run is the finding)
                self.fail(f"step must trace into a tf.function and run: {_first_line(err)} (step {t})")
            steps.append(self.check_step(state, time_step, steps[-1], f"step {t}") if check else _numpy(time_step))
        if check and not any((s.step_type == StepType.LAST).any() for s in steps):
            self.fail(f"no episode ended within {self.steps} steps: give check_graph_environment more steps")
        return steps

    def check_step(self, state: Any, time_step: Any, previous: Any, where: str) -> TimeStep:
        self.check_against_spec("state", state, self.env.state_spec(), where)
        self.check_against_spec("time_step", time_step, self.env.time_step_spec(), where)
        ts = _numpy(time_step)
        if not np.array_equal(ts.env_id, self.env_ids):
            self.fail(f"env_id must be first_env_id + copy index {self.env_ids.tolist()}, got {ts.env_id.tolist()} ({where})")
        if not np.isin(ts.step_type, (StepType.FIRST, StepType.MID, StepType.LAST)).all():
            self.fail(f"step_type must be FIRST, MID or LAST, got {ts.step_type.tolist()} ({where})")
        if not np.isin(ts.discount, (0.0, 1.0)).all():
            self.fail(f"discount must be 0 (terminated) or 1, got {ts.discount.tolist()} ({where})")
        first = ts.step_type == StepType.FIRST
        if previous is None:
            self.copies_fail(~first, "reset must return FIRST steps", where)
        self.copies_fail((ts.discount == 0) & (ts.step_type != StepType.LAST), "a discount of 0 only on a LAST step", where)
        if previous is not None:
            was_last = previous.step_type == StepType.LAST
            self.copies_fail(was_last & ~first, "after LAST the next step must be FIRST (autoreset)", where)
            self.copies_fail(first & ~was_last, "FIRST only after LAST", where)
        self.copies_fail(first & (ts.reward != 0), "a FIRST step has reward 0", where)
        self.copies_fail(first & (ts.discount != 1), "a FIRST step has discount 1", where)
        for leaf in tf.nest.flatten(ts.prev_action):
            nonzero = leaf.reshape(self.batch, -1).any(axis=1) if leaf.size else np.zeros(self.batch, bool)
            self.copies_fail(first & nonzero, "a FIRST step has a zero prev_action", where)
        return ts

    def copies_fail(self, broken: np.ndarray, rule: str, where: str) -> None:
        if np.any(broken):
            self.fail(f"{rule} (copy {int(np.argmax(broken))}, {where})")

    # -- one graph -----------------------------------------------------------------------------
    def check_graph_loop(self, actions: list) -> None:
        stacked = tf.nest.map_structure(lambda *leaves: tf.stack(leaves), *actions)

        @tf.function(jit_compile=self.jit_compile)
        def loop(seed):
            state, time_step = self.env.reset(seed)

            def body(t, state, time_step, episodes):
                state, time_step = self.env.step(state, tf.nest.map_structure(lambda a: a[t], stacked))
                ended = tf.reduce_sum(tf.cast(tf.equal(time_step.step_type, StepType.LAST), tf.int32))
                return t + 1, state, time_step, episodes + ended

            return tf.while_loop(lambda t, *_: t < self.steps, body, (0, state, time_step, 0))

        mode = "tf.function(jit_compile=True)" if self.jit_compile else "tf.function"
        try:
            _, state, time_step, episodes = loop(tf.constant([self.seed, 0], tf.int32))
        except Exception as err:  # noqa: BLE001  (any failure to trace or run is the finding)
            self.fail(f"reset and step must run in one {mode} around a tf.while_loop: {_first_line(err)}")
        self.check_against_spec("state", state, self.env.state_spec(), f"after a tf.while_loop of {self.steps} steps")
        if int(episodes) == 0:
            self.fail(f"no episode ended in a tf.while_loop of {self.steps} steps")


def _first_line(err: BaseException) -> str:
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return f"{type(err).__name__}: {lines[0]}" if lines else type(err).__name__


def _random_leaf(rng: np.random.Generator, spec: tf.TensorSpec, batch: int) -> np.ndarray:
    shape = (batch, *spec.shape)
    dtype = spec.dtype.as_numpy_dtype
    low: Any = getattr(spec, "minimum", None)
    high: Any = getattr(spec, "maximum", None)
    if spec.dtype.is_integer or spec.dtype.is_bool:
        low = 0 if low is None else low
        high = 1 if high is None else high
        return rng.integers(np.broadcast_to(low, shape), np.broadcast_to(high, shape), endpoint=True).astype(dtype)
    if low is None:
        return rng.standard_normal(shape).astype(dtype)
    return rng.uniform(np.broadcast_to(low, shape), np.broadcast_to(high, shape)).astype(dtype)


def _numpy(time_step: TimeStep) -> TimeStep:
    return tf.nest.map_structure(lambda t: np.asarray(t), time_step)


def _nests_equal(a: Any, b: Any) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(tf.nest.flatten(a), tf.nest.flatten(b)))


def _paths(nest: Any, prefix: str = "") -> list:
    """``["['physics']", ...]``: how to reach each leaf of a nest, in ``tf.nest.flatten`` order."""
    if isinstance(nest, dict):
        return [p for key in sorted(nest) for p in _paths(nest[key], f"{prefix}[{key!r}]")]
    if isinstance(nest, tuple) and hasattr(nest, "_fields"):
        return [p for name, value in zip(nest._fields, nest) for p in _paths(value, f"{prefix}.{name}")]
    if isinstance(nest, (tuple, list)):
        return [p for i, value in enumerate(nest) for p in _paths(value, f"{prefix}[{i}]")]
    return [prefix]
