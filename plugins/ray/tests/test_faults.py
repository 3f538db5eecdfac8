"""Runners that die, raise or hang are restarted and the run goes on; past the limit it stops in one line."""

from __future__ import annotations

import os
import signal
import time

import pytest
import tensorflow as tf

from rlengine.errors import WorkerError

pytestmark = pytest.mark.ray  # starts Ray processes: tox -e ray runs these


def _iterate(pipeline, iterations: int, at: int = -1, fault=lambda: None, until=None, seconds=180.0) -> list:
    """``iterations`` iterations (``fault()`` after iteration ``at``), then more until ``until(received)``
    holds (a restarted runner takes seconds to build); every unroll they received."""
    received, original = [], pipeline._receive
    pipeline._receive = lambda: received.append(original()) or received[-1]
    env_steps, i, deadline = 0, 0, time.monotonic() + seconds
    while i < iterations or (until is not None and not until(received) and time.monotonic() < deadline):
        env_steps += pipeline.iterate(env_steps).env_steps
        if i == at:
            fault()
        i += 1
    return received


def _lives(received: list, r: int) -> int:
    return len({u.incarnation for u in received if u.runner == r})


def _check_sequences(received: list) -> None:
    """Nothing counted twice, nothing skipped within one life of a runner."""
    for incarnation in {u.incarnation for u in received}:
        sequences = [u.sequence for u in received if u.incarnation == incarnation]
        assert sequences == list(range(len(sequences))), sequences


def _runner_pid(pipeline, r: int) -> int:
    return pipeline.fleet.descriptions[r]["pid"]


@pytest.mark.parametrize("algorithm", ["probe", "probe-q"])
def test_killed_runner_process_is_restarted_with_current_weights(local_ray, components_of, algorithm):
    components = components_of(algorithm=algorithm)
    pipeline = components.pipeline
    pipeline.start()
    first_pid = _runner_pid(pipeline, 1)
    received = _iterate(pipeline, 6, at=3, fault=lambda: os.kill(first_pid, signal.SIGKILL),
                        until=lambda got: _lives(got, 1) == 2 and got[-1].runner == 1)
    assert pipeline.fleet.restarts == [0, 1]
    assert _runner_pid(pipeline, 1) != first_pid
    # at the driver's priority, not Ray's niceness 15: a busy machine would starve the restarted runner
    assert os.getpriority(os.PRIO_PROCESS, _runner_pid(pipeline, 1)) == os.getpriority(os.PRIO_PROCESS, 0)
    assert _lives(received, 1) == 2  # it sampled before and after the restart
    _check_sequences(received)
    newest = max(u.version for u in received if u.runner == 1)
    assert newest > 2  # the restarted runner acted with weights published after the kill
    probes = tf.nest.pack_sequence_as(components.specs.experience, received[-1].experience).rollout_info["probe"]
    assert probes.min() > 1.0  # trained weights, not the initial ones


def test_env_raising_in_a_runner_restarts_it_once(local_ray, components_of, tmp_path):
    components = components_of(max_env_restarts=0, sections={"chaos": {
        "runner_first_env_id": 2, "raise_at_step": 6, "once_file": str(tmp_path / "struck")}})
    pipeline = components.pipeline
    pipeline.start()
    received = _iterate(pipeline, 4, until=lambda got: _lives(got, 1) == 2)
    assert (tmp_path / "struck").exists()
    assert pipeline.fleet.restarts == [0, 1]
    assert "chaos env 2 raised at step 6" in pipeline.fleet.causes[1]
    assert _lives(received, 1) == 2
    _check_sequences(received)


def test_runner_failing_past_the_limit_stops_the_run_in_one_line(local_ray, components_of):
    components = components_of(max_env_restarts=0, ray_section={"max_runner_restarts": 1},
                               sections={"chaos": {"runner_first_env_id": 0, "raise_at_step": 3}})
    pipeline = components.pipeline
    pipeline.start()
    with pytest.raises(WorkerError) as caught:
        _iterate(pipeline, 4, until=lambda got: False)
    message = str(caught.value)
    assert "\n" not in message
    assert "ray runner 0 failed 2 times, more than ray.max_runner_restarts = 1" in message
    assert "chaos env 0 raised at step 3" in message


def test_hung_runner_is_killed_and_restarted(local_ray, components_of):
    # no answer within env_step_timeout x unroll_length = 6 s: the process is stopped, not dead, so only
    # the fleet's own clock can tell
    components = components_of(env_step_timeout=1.5)
    pipeline = components.pipeline
    pipeline.start()
    stopped = _runner_pid(pipeline, 0)
    received = _iterate(pipeline, 4, at=2, fault=lambda: os.kill(stopped, signal.SIGSTOP),
                        until=lambda got: _lives(got, 0) == 2)
    try:
        assert pipeline.fleet.restarts == [1, 0]
        assert "no unroll within 6 s" in pipeline.fleet.causes[0]
        assert _runner_pid(pipeline, 0) != stopped
        _check_sequences(received)
    finally:
        try:
            os.kill(stopped, signal.SIGKILL)
        except ProcessLookupError:
            pass
