"""The update schedule every pipeline follows: each rule at its boundary, with ints and with tensors."""

from types import SimpleNamespace

import numpy as np
import pytest
import tensorflow as tf

from rlengine.api.data import StepType
from rlengine.learn.replay.buffer import ReplayBuffer
from rlengine.learn.schedule import UpdateSchedule


def algorithm(off_policy=True, initial_collect_steps=8, num_updates_per_iteration=0):
    return SimpleNamespace(off_policy=off_policy, initial_collect_steps=initial_collect_steps,
                           num_updates_per_iteration=num_updates_per_iteration)


SPEC = {"step_type": tf.TensorSpec([], tf.int32), "env_id": tf.TensorSpec([], tf.int32)}


def rows(env_ids):
    return {"step_type": tf.fill([len(env_ids)], int(StepType.MID)), "env_id": tf.constant(env_ids, tf.int32)}


def newest_step_types(buffer):
    return buffer.gather_all()["step_type"].numpy()[:, -1]


def test_from_replay_follows_the_algorithm():
    assert UpdateSchedule(algorithm(off_policy=True)).from_replay is True
    assert UpdateSchedule(algorithm(off_policy=False)).from_replay is False


def test_warming_up_until_exactly_initial_collect_steps():
    schedule = UpdateSchedule(algorithm(initial_collect_steps=8))
    assert [schedule.warming_up(steps) for steps in (0, 7, 8, 9)] == [True, True, False, False]
    assert not UpdateSchedule(algorithm(initial_collect_steps=0)).warming_up(0)


def test_an_on_policy_algorithm_never_warms_up():
    assert not UpdateSchedule(algorithm(off_policy=False, initial_collect_steps=8)).warming_up(0)


def test_warming_up_of_a_tensor_is_a_tensor():
    schedule = UpdateSchedule(algorithm(initial_collect_steps=8))
    flags = [schedule.warming_up(tf.constant(steps)) for steps in (7, 8)]
    assert all(tf.is_tensor(f) for f in flags) and [bool(f) for f in flags] == [True, False]


def test_updates_fixed_per_iteration():
    schedule = UpdateSchedule(algorithm(num_updates_per_iteration=3))
    assert schedule.updates(32) == 3 and isinstance(schedule.updates(32), int)
    n = schedule.updates(tf.constant(32))
    assert n.dtype == tf.int32 and int(n) == 3


def test_zero_updates_per_iteration_means_one_per_env_step():
    schedule = UpdateSchedule(algorithm(num_updates_per_iteration=0))
    assert schedule.updates(32) == 32 and isinstance(schedule.updates(np.int64(32)), int)
    n = schedule.updates(tf.constant(32))
    assert n.dtype == tf.int32 and int(n) == 32


def test_updates_inside_a_graph_from_a_batch_known_only_when_it_runs():
    schedule = UpdateSchedule(algorithm(num_updates_per_iteration=0))

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32)])
    def updates(step_types):
        return schedule.updates(4 * tf.shape(step_types)[1])

    assert int(updates(tf.zeros([5, 3], tf.int32))) == 12


def test_fresh_up_to_exactly_max_policy_lag():
    schedule = UpdateSchedule(algorithm(off_policy=False), max_policy_lag=2)
    assert [schedule.fresh(lag) for lag in (0, 1, 2, 3)] == [True, True, True, False]
    assert bool(schedule.fresh(tf.constant(2, tf.int64))) and not bool(schedule.fresh(tf.constant(3, tf.int64)))


def test_without_a_lag_limit_every_unroll_is_fresh():
    assert UpdateSchedule(algorithm(off_policy=False)).fresh(10**6)
    assert UpdateSchedule(algorithm(off_policy=False), max_policy_lag=0).fresh(0)


def test_replay_ready_once_a_sequence_is_stored_and_then_not_read_again():
    buffer = ReplayBuffer(SPEC, 2, 8, sequence_length=2)
    schedule = UpdateSchedule(algorithm(), buffer)
    assert not schedule.replay_ready()
    buffer.add(rows([0]))
    assert not schedule.replay_ready()
    buffer.add(rows([0]))
    assert schedule.replay_ready()
    buffer.clear()  # a buffer that shrank is not asked again: its rows only grow in a run
    assert schedule.replay_ready()


def test_dropped_cuts_the_stored_episodes_of_those_copies_only():
    buffer = ReplayBuffer(SPEC, 3, 12, sequence_length=1)
    buffer.add(rows([0, 1, 2]))
    buffer.add(rows([0, 1, 2]))
    schedule = UpdateSchedule(algorithm(), buffer)
    schedule.dropped(tf.constant([1, 2]))
    assert newest_step_types(buffer).tolist() == [StepType.MID, StepType.LAST, StepType.LAST]
    schedule.dropped()  # every copy
    assert newest_step_types(buffer).tolist() == [StepType.LAST] * 3


def test_dropped_without_a_replay_cuts_nothing():
    UpdateSchedule(algorithm(off_policy=False)).dropped()
    UpdateSchedule(algorithm(off_policy=False)).dropped([0, 1])


@pytest.mark.parametrize("env_ids", [None, [1]])
def test_dropped_skips_copies_that_hold_no_rows(env_ids):
    buffer = ReplayBuffer(SPEC, 2, 8, sequence_length=1)
    buffer.add(rows([0]))
    UpdateSchedule(algorithm(), buffer).dropped(env_ids)
    assert int(buffer.num_rows()) == 1
