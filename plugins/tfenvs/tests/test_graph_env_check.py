"""rlengine.testing.check_graph_environment: the five environments pass it, and small environments
that break one rule each fail it with one line naming the env id and the rule."""

import pytest
import tensorflow as tf
from rlengine_tfenvs.plugin import GRAPH_ENVIRONMENTS
from rlengine_tfenvs.random import copy_keys

from rlengine import BoundedTensorSpec, GraphEnvironment, StepType, TimeStep
from rlengine.testing import check_graph_environment


def _make(env_id, num_envs=2, first_env_id=0):
    import importlib

    module, _, name = GRAPH_ENVIRONMENTS[env_id].partition(":")
    return getattr(importlib.import_module(module), name)(env_id, num_envs, seed=0, first_env_id=first_env_id)


@pytest.mark.thorough
@pytest.mark.parametrize("env_id", list(GRAPH_ENVIRONMENTS))
def test_first_party_environments_keep_the_contract(env_id):
    env = _make(env_id, num_envs=2, first_env_id=5)
    # random actions: episodes may all run out of time, except CartPole's
    check_graph_environment(env, steps=100 if env_id == "tf/CartPole-v1" else env.max_episode_steps + 10)


@pytest.mark.thorough  # the root suite leaves it out for time; this package's tox env runs it
def test_cartpole_keeps_the_contract_compiled_with_xla():
    check_graph_environment(_make("tf/CartPole-v1", num_envs=3), steps=200, jit_compile=True)


class Tick(GraphEnvironment):
    """A correct little graph env: counts from a random start to 3 steps an episode; reward 1."""

    length = 3

    def time_step_spec(self):
        return TimeStep(tf.TensorSpec((), tf.int32), tf.TensorSpec((), tf.float32), tf.TensorSpec((), tf.float32),
                        tf.TensorSpec((1,), tf.float32), self.action_spec(), tf.TensorSpec((), tf.int32))

    def action_spec(self):
        return BoundedTensorSpec((), tf.int32, 0, 1)

    def state_spec(self):
        return {"t": tf.TensorSpec((), tf.int32), "start": tf.TensorSpec((), tf.float32)}

    def ids(self):
        return tf.range(self.first_env_id, self.first_env_id + self.num_envs)

    def reset(self, seed):
        start = tf.random.stateless_uniform([self.num_envs], seed)
        state = {"t": tf.zeros([self.num_envs], tf.int32), "start": start}
        zeros = tf.zeros([self.num_envs])
        return state, TimeStep(tf.zeros([self.num_envs], tf.int32), zeros, zeros + 1, start[:, None],
                               tf.zeros([self.num_envs], tf.int32), self.ids())

    def step(self, state, action):
        restart = state["t"] >= self.length
        t = tf.where(restart, 0, state["t"] + 1)
        last = t >= self.length
        step_type = tf.where(restart, StepType.FIRST, tf.where(last, StepType.LAST, StepType.MID))
        observation = (state["start"] + tf.cast(t, tf.float32))[:, None]
        reward = tf.where(restart, 0.0, 1.0)
        time_step = TimeStep(step_type, reward, tf.where(last, 0.0, 1.0), observation,
                             tf.where(restart, 0, action), self.ids())
        return {"t": t, "start": state["start"]}, time_step


class WrongDtype(Tick):
    def step(self, state, action):
        state, time_step = super().step(state, action)
        return state, time_step._replace(reward=tf.cast(time_step.reward, tf.float64))


class NoAutoreset(Tick):
    def step(self, state, action):
        state, time_step = super().step(state, action)
        stuck = time_step.step_type == StepType.FIRST  # keeps saying LAST where it should start again
        return state, time_step._replace(step_type=tf.where(stuck, StepType.LAST, time_step.step_type))


class GrowingState(Tick):
    def step(self, state, action):
        state, time_step = super().step(state, action)
        return {**state, "start": tf.concat([state["start"], state["start"][:1]], 0)}, time_step


class SeedIgnored(Tick):
    def reset(self, seed):
        return super().reset(tf.constant([1, 2]))


class WrongEnvId(Tick):
    def ids(self):
        return tf.range(self.num_envs)


class PythonControlFlow(Tick):
    def step(self, state, action):
        if bool(tf.reduce_any(state["t"] > 1)):  # a tensor's value read in Python: cannot trace
            pass
        return super().step(state, action)


@pytest.mark.parametrize("env_class, rule", [
    (WrongDtype, "'broken': time_step.reward must be float32 as its spec says, got float64 (step 1)"),
    (NoAutoreset, "'broken': after LAST the next step must be FIRST (autoreset) (copy 0, step 4)"),
    (GrowingState, "'broken': state['start'] must have shape [2] (batch, then its spec's), got [3] (step 1)"),
    (SeedIgnored, "'broken': different seeds must give different episodes (the observations are the same; "
                  "a deterministic task passes random_episodes=False)"),
    (WrongEnvId, "'broken': env_id must be first_env_id + copy index [3, 4], got [0, 1] (reset)"),
    (PythonControlFlow, "'broken': step must trace into a tf.function and run: OperatorNotAllowedInGraphError"),
])
def test_each_broken_rule_fails_in_one_line_naming_the_env_and_the_rule(env_class, rule):
    env = env_class("broken", 2, seed=0, first_env_id=3 if env_class is WrongEnvId else 0)
    with pytest.raises(AssertionError) as caught:
        check_graph_environment(env, steps=20)
    message = str(caught.value)
    assert message.startswith(rule) and "\n" not in message, message


def test_a_deterministic_task_may_ignore_the_seed():
    check_graph_environment(SeedIgnored("deterministic", 2, seed=0), steps=20, random_episodes=False)


def test_the_little_env_of_these_tests_passes():
    check_graph_environment(Tick("tick", 2, seed=0, first_env_id=3), steps=20)


def test_a_copy_plays_the_same_episodes_whatever_batch_it_is_in():
    assert tf.reduce_all(copy_keys(tf.constant([4, 2]), tf.range(3, 5)) == copy_keys(tf.constant([4, 2]), tf.range(8))[3:5])
