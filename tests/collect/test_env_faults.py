"""Environment faults: crashed envs are recreated and their partial unrolls dropped; hangs and NaNs stop the run."""

import time

import numpy as np
import pytest

from rlengine import hookimpl
from rlengine.api.data import StepType
from rlengine.collect.faults import RESTART_SEED_STRIDE, GuardedEnvironment
from rlengine.errors import EnvironmentFault, EnvironmentTimeout, NonFiniteObservation
from rlengine.run.engine import Engine
from rlengine.testing import MemoryWriter, ToyQAlgorithm, testing_plugin, tiny_config
from rlengine.testing.failing import FaultyConfig, FaultyEnv, reset_fault_plan

UNROLL, COPIES = 4, 2
BUDGET = 10 * UNROLL * COPIES  # ten unrolls: batched steps 1..40, unroll k holds steps 4k-3..4k


class Spy:
    """Records what the learner trains on (on-policy) and what the replay buffer holds at the end."""

    def __init__(self):
        self.trained, self.buffer_rows, self.pipeline = [], None, None

    @hookimpl
    def rlengine_train_start(self, run):
        learner, self.pipeline = run.internals.learner, run.internals.pipeline
        train = learner.train

        def recording_train(experience):
            self.trained.append(experience.observation.numpy())
            return train(experience)

        learner.train = recording_train

    @hookimpl
    def rlengine_train_end(self, run, error):
        buffer = run.internals.replay
        if buffer is not None:
            rows = buffer.gather_all()
            self.buffer_rows = (rows.observation.numpy(), rows.step_type.numpy())


class RoomyToyQ(ToyQAlgorithm):
    replay_capacity = 256  # holds the whole run, so the test sees every stored row


class Extra:
    @hookimpl
    def rlengine_register_algorithms(self, register):
        register("toy-q-roomy", RoomyToyQ)


def _engine(tmp_path, plan, faulty=None, spy=None, **train):
    reset_fault_plan(plan)
    values = dict(env="faulty", num_envs=COPIES, unroll_length=UNROLL, num_env_steps=BUDGET, eval_interval=0)
    values.update(train)
    raw = {**tiny_config(str(tmp_path), **values), "faulty": {"plan": plan, "episode_length": 3, **(faulty or {})}}
    extra = [("testing", testing_plugin()), ("extra", Extra())] + ([("spy", spy)] if spy else [])
    return Engine(raw, extra_plugins=extra)


def _steps_of_unrolls(*unrolls):
    return {step for k in unrolls for step in range(UNROLL * (k - 1) + 1, UNROLL * k + 1)}


def test_on_policy_run_survives_faults_and_never_trains_on_a_broken_unroll(tmp_path):
    spy = Spy()
    result = _engine(tmp_path, "on-policy", {"fail_steps": [6, 23]}, spy).train()  # in unrolls 2 and 6
    assert result.env_steps == BUDGET
    last = MemoryWriter.last.rows[-1]
    assert last["train/env_restarts"] == 2 and last["train/dropped_unrolls"] == 2
    assert len(spy.trained) == 8
    # rows 1..T of every trained unroll, by the step that produced them (column 2 of the observation)
    seen = {int(m) for obs in spy.trained for m in obs[1:, :, 2].ravel()}
    assert seen == set(range(1, 41)) - _steps_of_unrolls(2, 6)


def test_off_policy_replay_never_holds_a_row_of_a_broken_unroll(tmp_path):
    spy = Spy()
    _engine(tmp_path, "off-policy", {"fail_steps": [6, 23]}, spy, algorithm="toy-q-roomy").train()
    last = MemoryWriter.last.rows[-1]
    assert last["train/env_restarts"] == 2 and last["train/dropped_unrolls"] == 2
    observation, step_type = spy.buffer_rows
    marks = observation[:, :, 2]
    stored = {int(m) for m in marks.ravel() if m > 0}
    assert stored == set(range(1, 41)) - _steps_of_unrolls(2, 6)
    # the row before each gap ends its episode, so no transition runs across the crash
    for before_gap in (4, 20):
        assert (step_type[marks == before_gap] == StepType.LAST).all()
    for copy_marks, copy_types in zip(marks, step_type):
        after_gap = np.flatnonzero(np.isin(copy_marks, [4, 20])) + 1
        assert (copy_types[after_gap] == StepType.FIRST).all()


def test_a_failing_reset_counts_as_a_restart_too(tmp_path):
    # reset 1 is the build's check; step 5 fails, the restarts' resets 2 and 3 fail, the next one (4) works
    # (a failing reset 1 is not retried: tests/safety/test_one_line_errors.py)
    _engine(tmp_path, "reset", {"fail_steps": [5], "fail_resets": [2, 3]}).train()
    last = MemoryWriter.last.rows[-1]
    assert last["train/env_restarts"] == 3 and last["train/dropped_unrolls"] == 1


def test_more_faults_than_max_env_restarts_stop_the_run_naming_the_env(tmp_path):
    engine = _engine(tmp_path, "too-many", {"fail_steps": [3, 7, 11]}, max_env_restarts=2)
    with pytest.raises(EnvironmentFault) as err:
        engine.train()
    message = str(err.value)
    assert "\n" not in message
    for part in ("environment 'faulty'", "copies 0..1", "2 restart(s)", "train.max_env_restarts = 2",
                 "RuntimeError: injected step fault at step 11"):
        assert part in message


def test_no_restarts_allowed_stops_at_the_first_error(tmp_path):
    with pytest.raises(EnvironmentFault, match="after 0 restart.*injected step fault at step 3"):
        _engine(tmp_path, "none", {"fail_steps": [3]}, max_env_restarts=0).train()


def test_a_hanging_env_stops_the_run_with_a_timeout_naming_it(tmp_path):
    engine = _engine(tmp_path, "hang", {"hang_at_step": 6, "hang_seconds": 10.0}, env_step_timeout=0.5)
    with pytest.raises(EnvironmentTimeout,
                       match=r"environment 'faulty' \(copies 0..1\) did not answer step\(\) within 0.5 s"):
        engine.train()
    assert time.perf_counter() - FaultyEnv.counters["hang"]["hang_started"] < 5  # long before the hang ends


def test_nan_observation_stops_the_run_naming_env_copy_and_field(tmp_path):
    with pytest.raises(NonFiniteObservation) as err:
        _engine(tmp_path, "nan", {"nan_at_step": 5}).train()
    message = str(err.value)
    assert "\n" not in message
    for part in ("environment 'faulty'", "non-finite observation[0] = nan", "copy 1 (env_id 1)", "step()"):
        assert part in message


def _guarded(plan, check_finite=True, **faulty):
    reset_fault_plan(plan)
    seeds = []

    def factory(seed):
        seeds.append(seed)
        return FaultyEnv("faulty", COPIES, seed, first_env_id=5, config=FaultyConfig(plan=plan, **faulty))

    return GuardedEnvironment(factory, "environment 'faulty'", 7, max_restarts=3, check_finite=check_finite), seeds


def test_guarded_env_restarts_with_same_ids_and_a_fresh_seed_and_returns_first_steps():
    env, seeds = _guarded("unit", fail_steps=[2])
    env.reset()
    assert env.step(np.zeros(COPIES, np.int32)).step_type.tolist() == [StepType.MID] * COPIES
    restarted = env.step(np.zeros(COPIES, np.int32))
    assert env.restarts == 1 and restarted.step_type.tolist() == [StepType.FIRST] * COPIES
    assert restarted.env_id.tolist() == [5, 6] and seeds == [7, 7 + RESTART_SEED_STRIDE]
    env.close()


def test_non_finite_observations_can_be_let_through():
    env, _ = _guarded("nan-allowed", check_finite=False, nan_at_step=1)
    env.reset()
    assert np.isnan(env.step(np.zeros(COPIES, np.int32)).observation).any()
    env, _ = _guarded("nan-checked", nan_at_step=1)
    env.reset()
    with pytest.raises(NonFiniteObservation, match=r"copy 1 \(env_id 6\)"):
        env.step(np.zeros(COPIES, np.int32))
