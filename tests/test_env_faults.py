"""Environment faults: crashed envs are recreated and their partial unrolls dropped; hangs and NaNs stop the run."""

import os
import sys
import time

import gymnasium
import numpy as np
import pytest

from rlengine import hookimpl
from rlengine.data import StepType
from rlengine.engine import Engine
from rlengine.faults import (
    RESTART_SEED_STRIDE,
    EnvironmentFault,
    EnvironmentTimeout,
    GuardedEnvironment,
    NonFiniteObservation,
)
from rlengine.testing import (
    FaultyConfig,
    FaultyEnv,
    MemoryWriter,
    ToyQAlgorithm,
    reset_fault_plan,
    testing_plugin,
    tiny_config,
)

UNROLL, COPIES = 4, 2
BUDGET = 10 * UNROLL * COPIES  # ten unrolls: batched steps 1..40, unroll k holds steps 4k-3..4k


class Spy:
    """Records what the learner trains on (on-policy) and what the replay buffer holds at the end."""

    def __init__(self):
        self.trained, self.buffer_rows, self.pipeline = [], None, None

    @hookimpl
    def rlengine_train_start(self, run):
        learner, self.pipeline = run.components.learner, run.components.pipeline
        train = learner.train

        def recording_train(experience):
            self.trained.append(experience.observation.numpy())
            return train(experience)

        learner.train = recording_train

    @hookimpl
    def rlengine_train_end(self, run, error):
        buffer = run.components.buffer
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
    # reset 1 is the build's check; step 5 fails, the restart's reset (2) fails, the next one (3) works
    _engine(tmp_path, "reset", {"fail_steps": [5], "fail_resets": [1, 2]}).train()
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


# -- a Gymnasium env that raises, in this process and in worker processes ---------------------

RAISING_ID = "rlengine-test/Raising-v0"


class RaisingGymEnv(gymnasium.Env):
    """Raises in step ``fail_at`` of an episode while fault claims (files in ``claims``) remain."""

    observation_space = gymnasium.spaces.Box(-10.0, 10.0, (2,), np.float32)
    action_space = gymnasium.spaces.Discrete(2)

    def __init__(self, claims="", faults=0, fail_at=3, hang_at=0):
        self.claims, self.faults, self.fail_at, self.hang_at, self.t = claims, faults, fail_at, hang_at, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        if self.t == self.fail_at and self._claim():
            raise RuntimeError("injected gym fault")
        if self.t == self.hang_at:
            time.sleep(30)
        return np.full(2, self.t, np.float32), 1.0, False, self.t >= 6, {}

    def _claim(self):
        for i in range(self.faults):  # O_EXCL: each claim is taken once, across processes
            try:
                os.close(os.open(os.path.join(self.claims, f"fault-{i}"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
                return True
            except FileExistsError:
                continue
        return False


def _descendants():
    """Pids of every process below this one (worker processes hang below the forkserver)."""
    parents = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                parents[int(pid)] = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    found, frontier = set(), {os.getpid()}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


@pytest.fixture(scope="module")
def raising_gym_id():
    import cloudpickle

    # Worker processes rebuild the class from its pickled code instead of importing this test module.
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    if RAISING_ID not in gymnasium.registry:
        gymnasium.register(RAISING_ID, entry_point=RaisingGymEnv)
    yield RAISING_ID
    cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def _gym_engine(tmp_path, env_id, vectorization, make_kwargs, **train):
    raw = tiny_config(str(tmp_path), env=env_id, env_provider="gym", num_envs=COPIES, unroll_length=UNROLL,
                      num_env_steps=BUDGET, eval_interval=0, **train)
    raw["gym"] = {"vectorization": vectorization, "make_kwargs": {"claims": str(tmp_path), **make_kwargs}}
    return Engine(raw, extra_plugins=[("testing", testing_plugin())])


def _start_forkserver(env_id):
    """Start the forkserver before counting processes: it outlives every env by design."""
    from rlengine_gym import GymEnvironment

    GymEnvironment(env_id, 1, 0, config={"vectorization": "async"}).close()


@pytest.mark.first_party
@pytest.mark.parametrize("vectorization", ["sync", "async"])
def test_gym_env_that_raises_is_recreated_without_leaking_processes(tmp_path, raising_gym_id, vectorization):
    if vectorization == "async":
        _start_forkserver(raising_gym_id)
    before = _descendants()
    faults = 2
    result = _gym_engine(tmp_path, raising_gym_id, vectorization, {"faults": faults, "fail_at": 3}).train()
    assert result.env_steps == BUDGET
    last = MemoryWriter.last.rows[-1]
    # in process the first failing copy stops the batched step; worker processes all fail at once
    assert 1 <= last["train/env_restarts"] <= faults
    assert last["train/dropped_unrolls"] == last["train/env_restarts"]
    assert _descendants() <= before, "worker processes of a closed environment are still alive"


@pytest.mark.first_party
def test_hung_gym_worker_process_times_out_naming_the_env_and_is_terminated(tmp_path, raising_gym_id):
    _start_forkserver(raising_gym_id)
    before = _descendants()
    engine = _gym_engine(tmp_path, raising_gym_id, "async", {"hang_at": 5}, env_step_timeout=1.0)
    start = time.perf_counter()
    with pytest.raises(EnvironmentTimeout, match=f"environment '{RAISING_ID}' .*did not answer step.. within 1 s"):
        engine.train()
    assert time.perf_counter() - start < 20  # the hang lasts 30 s
    assert _descendants() <= before, "the hung worker processes were not terminated"
