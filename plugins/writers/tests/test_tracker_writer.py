"""What the tracker writers hand their sender thread: metrics thinned to one value per interval, evaluations whole."""

import threading

import attrs
import pytest
from rlengine_writers import tracker_writer
from rlengine_writers.tracker_writer import TrackerWriter


@attrs.define
class Config:
    interval_secs: float = 1.0
    flush_secs: float = 60.0
    close_secs: float = 30.0


class Recording(TrackerWriter):
    """Keeps what the sender thread would log."""

    tracker = "test"

    def __init__(self, root_dir, config):
        super().__init__(root_dir, config)
        self.sent, self.ended = [], False

    def send(self, rows):
        self.sent += [(step, values) for _, step, values in rows]

    def end(self, error):
        self.ended = error or True


@pytest.fixture
def clock(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(tracker_writer.time, "monotonic", lambda: now[0])
    return now


def _row(iteration, **values):
    return {"iteration": iteration, "env_steps": 4 * iteration, "wall_time": 0.1 * iteration, **values}


def test_a_metric_is_logged_once_per_interval_with_its_newest_value_at_its_own_step(tmp_path, clock):
    writer = Recording(str(tmp_path), Config(interval_secs=1.0))
    writer.write(_row(1, **{"loss/total": 1.0}))  # the first row goes out at once
    clock[0] += 0.3
    writer.write(_row(2, **{"loss/total": 2.0, "train/episode_return": 20.0}))
    clock[0] += 0.3
    writer.write(_row(3, **{"loss/total": 3.0}))  # held: 0.6 s since the last release
    clock[0] += 0.5
    writer.write(_row(4, **{"loss/total": 4.0, "time/step": 0.5}))  # 1.1 s: released with what was held
    clock[0] += 0.1
    writer.write(_row(5, **{"loss/total": 5.0}))  # held until close
    writer.close()

    assert writer.sent == [(4, {"loss/total": 1.0}),
                           (8, {"train/episode_return": 20.0}),  # the newest of its values, at its step
                           (16, {"loss/total": 4.0, "time/step": 0.5}),
                           (20, {"loss/total": 5.0})]
    assert writer.ended


def test_an_evaluation_row_goes_out_whole_after_the_values_held_before_it(tmp_path, clock):
    writer = Recording(str(tmp_path), Config(interval_secs=10.0))
    writer.write(_row(1, **{"loss/total": 1.0}))
    writer.write(_row(2, **{"loss/total": 2.0}))
    writer.write(_row(2, **{"eval/average_return": 7.0, "time/evaluation": 0.2}))
    writer.write(_row(3, **{"eval/average_return": 8.0}))
    writer.close()

    assert writer.sent == [(4, {"loss/total": 1.0}), (8, {"loss/total": 2.0}),
                           (8, {"eval/average_return": 7.0, "time/evaluation": 0.2}),
                           (12, {"eval/average_return": 8.0})]


def test_interval_zero_logs_every_row_and_only_numbers(tmp_path, clock):
    writer = Recording(str(tmp_path), Config(interval_secs=0.0))
    for i in (1, 2, 3):
        writer.write(_row(i, **{"loss/total": float(i), "note": "text"}))
    writer.close()
    assert writer.sent == [(4, {"loss/total": 1.0}), (8, {"loss/total": 2.0}), (12, {"loss/total": 3.0})]
    with pytest.raises(ValueError, match="closed"):
        writer.write(_row(4))


def test_closed_while_the_run_fails_the_writer_ends_its_tracker_run_with_that_error(tmp_path, clock):
    writer = Recording(str(tmp_path), Config())
    writer.write(_row(1, **{"loss/total": 1.0}))
    try:
        raise RuntimeError("the run failed")
    except RuntimeError as error:  # as the engine closes its writers while the run's error propagates
        writer.close()
        assert writer.ended is error


class Stuck(Recording):
    """A tracker whose server takes the first rows, then never answers again."""

    def __init__(self, root_dir, config):
        super().__init__(root_dir, config)
        self.answering = threading.Event()

    def send(self, rows):
        if self.sent:
            self.answering.wait()  # until the test ends
        super().send(rows)

    def destination(self):
        return "http://127.0.0.1:1"


def _stuck_writer(tmp_path, **config) -> Stuck:
    writer = Stuck(str(tmp_path), Config(interval_secs=0.0, flush_secs=0.01, **config))
    writer.write(_row(1, **{"loss/total": 1.0}))
    writer.flush()  # sent
    writer.write(_row(2, **{"loss/total": 2.0}))
    return writer


def _warning_lines(err: str) -> list:
    return [line for line in err.splitlines() if line.startswith("rlengine: warning: test: ")]


def test_closing_gives_up_after_close_secs_and_says_what_it_dropped(tmp_path, capsys):
    writer = _stuck_writer(tmp_path, close_secs=0.2)
    writer.write(_row(3, **{"loss/total": 3.0}))
    try:
        writer.close()  # returns: the stuck sender thread is left behind
        assert _warning_lines(capsys.readouterr().err) == [
            "rlengine: warning: test: gave up after 0.2 s (test.close_secs) closing the writer: 2 row(s) not sent "
            "to http://127.0.0.1:1, and its test run not ended"]
        assert writer.ended is False  # ending it would wait on the same server
    finally:
        writer.answering.set()


def test_closing_while_a_second_ctrl_c_aborts_waits_for_nothing(tmp_path, capsys):
    writer = _stuck_writer(tmp_path, close_secs=3600.0)  # a wait would hang the test
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:  # as the engine closes its writers while the abort propagates
            writer.close()
        lines = _warning_lines(capsys.readouterr().err)
        assert len(lines) == 1 and lines[0].startswith("rlengine: warning: test: aborted closing the writer: ")
    finally:
        writer.answering.set()


def test_ending_the_tracker_run_is_bounded_too(tmp_path, capsys):
    writer = Recording(str(tmp_path), Config(close_secs=0.2))
    blocked = threading.Event()
    writer.end = lambda error: blocked.wait()
    writer.write(_row(1, **{"loss/total": 1.0}))
    try:
        writer.close()
        assert _warning_lines(capsys.readouterr().err) == [
            "rlengine: warning: test: the test run at test was not ended within test.close_secs = 0.2 s: it may "
            "show as running"]
        assert writer.sent == [(4, {"loss/total": 1.0})]
    finally:
        blocked.set()
