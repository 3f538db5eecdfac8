"""The sender thread of the trackers: rows go out in batches, on time, and an error comes back to the caller."""

import threading
import time

import pytest
from rlengine_writers.background import BackgroundSender


class Destination:
    def __init__(self, fail_on=None, delay=0.0):
        self.batches, self.fail_on, self.delay = [], fail_on, delay
        self.threads = set()

    def send(self, items):
        self.threads.add(threading.current_thread().name)
        time.sleep(self.delay)
        if self.fail_on is not None and self.fail_on in items:
            raise RuntimeError(f"store refused {self.fail_on}")
        self.batches.append(list(items))


def test_rows_put_between_two_sends_share_one_batch_sent_from_the_sender_thread():
    destination = Destination(delay=0.05)
    sender = BackgroundSender(destination.send, interval_secs=60, name="test sender")
    for i in range(100):
        sender.put(i)
    sender.flush()  # does not wait the 60 s: flushing sends at once
    sender.put(100)
    sender.close()

    assert [item for batch in destination.batches for item in batch] == list(range(101))
    assert len(destination.batches) <= 3  # the first put may go alone before the rest queue up
    assert destination.threads == {"test sender"}
    assert 0 < sender.cpu_seconds < 5  # the thread's own CPU time, known once it has ended


def test_queued_rows_go_out_by_themselves_after_the_interval():
    destination = Destination()
    sender = BackgroundSender(destination.send, interval_secs=0.05, name="test sender")
    sender.put("a")
    deadline = time.monotonic() + 5
    while not destination.batches and time.monotonic() < deadline:
        time.sleep(0.01)
    assert destination.batches == [["a"]]
    sender.close()


def test_an_error_of_the_thread_is_raised_by_the_next_put_and_flush_and_kept_by_close():
    destination = Destination(fail_on="bad")
    sender = BackgroundSender(destination.send, interval_secs=60, name="test sender")
    sender.put("bad")
    with pytest.raises(RuntimeError, match="store refused bad"):
        sender.flush()
    with pytest.raises(RuntimeError, match="store refused bad"):
        sender.put("good")
    sender.close()  # does not raise: the run is over
    assert isinstance(sender.error, RuntimeError) and destination.batches == []


def test_close_sends_what_is_queued_and_a_closed_sender_takes_no_more():
    destination = Destination()
    sender = BackgroundSender(destination.send, interval_secs=60, name="test sender")
    sender.put(1)
    sender.put(2)
    sender.close()
    assert [item for batch in destination.batches for item in batch] == [1, 2]
    with pytest.raises(ValueError, match="closed"):
        sender.put(3)
    sender.flush()  # nothing queued, nothing to wait for
