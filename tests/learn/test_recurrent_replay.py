"""Recurrent training from replay: the state ``train_step`` sees at each row of a sampled sequence.

``StepCounter`` is an off-policy algorithm whose policy state counts the steps
since the episode's FIRST row. On the ``counting`` environment that count is
the observation's first entry, so the stored rollout state of every row is
known. ``train_step`` returns the state it was given in its info and
``train_complete`` records the stacked ``[L, B]`` infos of the last update in
variables the test reads after training.
"""

import numpy as np
import tensorflow as tf
import tf_keras

from rlengine import hookimpl
from rlengine.api import Algorithm
from rlengine.api.data import LossInfo, PolicyStep, StepType
from rlengine.run.engine import Engine
from rlengine.testing import testing_plugin, tiny_config

LENGTH, BATCH = 7, 6


class StepCounter(Algorithm):
    off_policy = True
    needs_time_dimension = True
    mini_batch_size = BATCH
    mini_batch_length = LENGTH
    num_updates_per_iteration = 2
    initial_collect_steps = 16
    replay_capacity = 64
    use_rollout_state = True

    def __init__(self, time_step_spec, action_spec, config):
        super().__init__(time_step_spec, action_spec, config)
        self.w = tf.Variable(0.0, name="w")
        self.optimizer = tf_keras.optimizers.SGD(0.1)
        self.updates = tf.Variable(0, name="updates", trainable=False)
        self.seen = tf.Variable(tf.fill([LENGTH, BATCH], -1.0), trainable=False, name="seen")
        self.stored = tf.Variable(tf.fill([LENGTH, BATCH], -1.0), trainable=False, name="stored")
        self.count = tf.Variable(tf.fill([LENGTH, BATCH], -1.0), trainable=False, name="count")
        self.step_type = tf.Variable(tf.fill([LENGTH, BATCH], -1), trainable=False, name="step_type")

    @property
    def state_spec(self):
        return tf.TensorSpec([], tf.float32)  # steps since FIRST

    def _act(self, time_step, state):
        batch = tf.shape(time_step.step_type)[0]
        return PolicyStep(tf.zeros([batch], tf.int32), state + 1.0, ())

    predict = rollout = _act

    def train_step(self, exp, state):
        info = {"seen": state, "stored": exp.state, "count": exp.observation[:, 0], "step_type": exp.step_type,
                "w": self.w * tf.ones_like(state)}
        return PolicyStep((), state + 1.0, info)

    def train_complete(self, tape, info, weight=None):
        with tape:
            loss = tf.reduce_mean(tf.square(info["w"] - 1.0))
        grads = tape.gradient(loss, [self.w])
        if info["seen"].shape[1] == BATCH:  # the learner's replayed [L, B] infos (not spec preparation's dummy batch)
            self.seen.assign(info["seen"])
            self.stored.assign(info["stored"])
            self.count.assign(info["count"])
            self.step_type.assign(info["step_type"])
            self.updates.assign_add(1)
        return LossInfo(loss, {}), [(grads[0], self.w)]


class ZeroStartCounter(StepCounter):
    use_rollout_state = False


class Keeper:
    @hookimpl
    def rlengine_register_algorithms(self, register):
        register("step-counter", StepCounter)
        register("zero-start-counter", ZeroStartCounter)

    @hookimpl
    def rlengine_train_end(self, run, error):
        self.algorithm = run.algorithm


def _train(tmp_path, algorithm):
    keeper = Keeper()
    config = tiny_config(str(tmp_path), algorithm=algorithm, num_env_steps=96, writers=[])
    config["counting"] = {"episode_length": 3}  # sequences of 7 rows cross episode starts
    Engine(config, extra_plugins=[("testing", testing_plugin()), ("keeper", keeper)]).train()
    algorithm = keeper.algorithm
    assert algorithm.updates.numpy() > 0
    return (algorithm.seen.numpy(), algorithm.stored.numpy(), algorithm.count.numpy(),
            algorithm.step_type.numpy())


def _check_resets(seen, step_type):
    first = step_type == StepType.FIRST
    assert first[1:].any()  # some sequence crosses an episode start
    np.testing.assert_array_equal(seen[first], 0.0)  # reset at every FIRST row, row 0 included
    for t in range(1, LENGTH):  # and counted on elsewhere
        np.testing.assert_array_equal(seen[t][~first[t]], seen[t - 1][~first[t]] + 1.0)


def test_rollout_state_starts_each_sequence(tmp_path):
    seen, stored, count, step_type = _train(tmp_path, "step-counter")
    np.testing.assert_array_equal(stored, count)  # the replayed state is the rollout's step count
    np.testing.assert_array_equal(seen[0], stored[0])
    assert (stored[0] > 0).any()  # not trivially zeros
    _check_resets(seen, step_type)
    np.testing.assert_array_equal(seen, stored)  # unrolled from the stored state, the count stays exact


def test_zero_state_starts_each_sequence_without_the_rollout_state(tmp_path):
    seen, stored, count, step_type = _train(tmp_path, "zero-start-counter")
    np.testing.assert_array_equal(stored, 0.0)  # replay keeps no state it will not start from: rows carry zeros
    assert (count[0] > 0).any()  # not trivially zero: the rows were mid-episode, their rollout state was not 0
    np.testing.assert_array_equal(seen[0], 0.0)
    _check_resets(seen, step_type)

