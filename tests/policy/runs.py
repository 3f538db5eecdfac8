"""The plugins and runs of the tests of rlengine.load: an environment that counts the copies made, a
recurrent algorithm, a transformer with a statistic and a state, and one whose step cannot convert."""

import os

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_probability as tfp

import rlengine
from rlengine import Algorithm, LossInfo, ObservationTransformer, PolicyStep, StepType, hookimpl
from rlengine.testing import CountingEnv, DictCountingEnv, ToyAlgorithm, testing_plugin, tiny_config

tfd = tfp.distributions
REPO_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Counted(CountingEnv):
    """``counting`` that keeps every instance: loading must make none."""

    made: list = []

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        Counted.made.append(self)


class DictCounting(Counted, DictCountingEnv):
    """``dict-counting``: kept as ``Counted`` keeps it."""


class Memory(Algorithm):
    """Recurrent: the state counts the steps since the episode began; the logit of action 1 is
    ``0.3 features . w + b + 1 if the count is odd else -1``, trained by a one-step policy gradient."""

    needs_time_dimension = True

    def __init__(self, time_step_spec, action_spec, config):
        super().__init__(time_step_spec, action_spec, config)
        width = sum(int(np.prod(s.shape)) for s in tf.nest.flatten(time_step_spec.observation))
        self.w = tf.Variable(tf.random.stateless_normal([width], seed=[1, 2]), name="w")
        self.b = tf.Variable(0.0, name="b")

    @property
    def state_spec(self):
        return tf.TensorSpec([], tf.float32)

    def _dist(self, observation, state):
        count = state + 1.0
        x = tf.concat([tf.reshape(tf.cast(leaf, tf.float32), [tf.shape(leaf)[0], -1])
                       for leaf in tf.nest.flatten(observation)], -1)
        logit = 0.3 * tf.reduce_sum(x * self.w, -1) + self.b + 2.0 * tf.math.floormod(count, 2.0) - 1.0
        return tfd.Categorical(logits=tf.stack([tf.zeros_like(logit), logit], -1), dtype=tf.int32), count

    def predict(self, time_step, state):
        dist, count = self._dist(time_step.observation, state)
        return PolicyStep(dist.mode(), count, ())

    def rollout(self, time_step, state):
        dist, count = self._dist(time_step.observation, state)
        return PolicyStep(dist.sample(seed=rlengine.random.seed()), count, {"dist": dist})

    def preprocess_experience(self, exp):
        rows = tf.nest.map_structure(lambda t: t[:-1], exp._replace(rollout_info=()))
        return rows._replace(rollout_info=exp.reward[1:])

    def train_step(self, exp, state):
        dist, count = self._dist(exp.observation, state)
        return PolicyStep((), count, {"log_prob": dist.log_prob(exp.action), "reward": exp.rollout_info})

    def train_complete(self, tape, info, weight=None):
        with tape:
            loss = -tf.reduce_mean(info["log_prob"] * info["reward"])
        grads = tape.gradient(loss, [self.w, self.b])
        return LossInfo(loss, {}), list(zip(grads, [self.w, self.b]))

    def apply_gradients(self, grads_and_vars):
        for grad, var in grads_and_vars:
            var.assign_sub(0.05 * grad)


class Shift(ObservationTransformer):
    """``[x - offset, previous x - offset]`` for a ``[2]`` observation; ``offset`` grows by 0.05 an update() call
    (a statistic), the state is the previous observation (a frame stack of two)."""

    def __init__(self, observation_spec, config):
        super().__init__(observation_spec, config)
        self.offset = tf.Variable(0.0, trainable=False, name="offset")

    @property
    def output_spec(self):
        return tf.TensorSpec([4], tf.float32)

    @property
    def state_spec(self):
        return tf.TensorSpec([2], tf.float32)

    def transform(self, observation, step_type, state):
        first = tf.equal(step_type, StepType.FIRST)[:, None]
        previous = tf.where(first, observation, state)
        return tf.concat([observation - self.offset, previous - self.offset], -1), observation

    def update(self, observation):
        self.offset.assign_add(0.05)


class Unconvertible(ToyAlgorithm):
    """``toy`` whose greedy step calls back into Python, which TensorFlow Lite cannot hold."""

    def predict(self, time_step, state):
        step = super().predict(time_step, state)
        action = tf.numpy_function(lambda a: a, [step.action], tf.int32, stateful=False)
        return step._replace(action=tf.ensure_shape(action, step.action.shape))


class LoadTestPlugin:
    @hookimpl
    def rlengine_register_environments(self, register):
        register("counted", Counted)
        register("dict-counting", DictCounting)

    @hookimpl
    def rlengine_register_algorithms(self, register):
        register("memory", Memory)
        register("unconvertible", Unconvertible)

    @hookimpl
    def rlengine_register_transformers(self, register):
        register("shift", Shift)


def plugins() -> dict:
    return {"extra_plugins": [("testing", testing_plugin()), ("load-test", LoadTestPlugin())]}


def load(run_dir, checkpoint="latest", backend="tensorflow", **kwargs):
    """rlengine.load with this module's plugins; no background conversion unless asked for (the tests' time)."""
    return rlengine.load(run_dir, checkpoint, backend=backend, **plugins(), **kwargs)


def train(tmp_path_factory, name, **train_settings) -> str:
    root = str(tmp_path_factory.mktemp(name) / "run")
    with pytest.MonkeyPatch.context() as patch:  # the conftest's state key, for a module-scoped run
        patch.setenv("RLENGINE_STATE_KEY_FILE", str(tmp_path_factory.getbasetemp() / "state-key"))
        rlengine.Engine(tiny_config(root, **train_settings), **plugins()).train()
    return root


def train_first_party(tmp_path_factory, name: str, sections: dict) -> str:
    """A short run of the first-party plugins: ``sections`` of the raw config (``train`` without its root_dir)."""
    root = str(tmp_path_factory.mktemp(name) / "run")
    train = {"writers": [], "num_eval_episodes": 1, "checkpoint_seconds": 0, **sections["train"], "root_dir": root}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RLENGINE_STATE_KEY_FILE", str(tmp_path_factory.getbasetemp() / "state-key"))
        rlengine.Engine({**sections, "train": train}).train()
    return root


def train_cartpole(tmp_path_factory) -> str:
    """PPO with an LSTM, normalize and frame_stack on CartPole-v1: every kind of state, real plugins."""
    return train_first_party(tmp_path_factory, "cartpole", {
        "train": dict(algorithm="ppo", env="CartPole-v1", num_envs=2, unroll_length=16, num_env_steps=128,
                      transformers=["normalize", "frame_stack"], eval_interval=4),
        "ppo": {"lstm_size": 8, "hidden_sizes": [16], "num_epochs": 1, "mini_batch_size": 0},
        "frame_stack": {"num_frames": 2}})
