"""The env watcher's thread ends with the run, and keeps no run's objects alive between runs."""

import gc
import threading
import weakref

from rlengine.collect.watch_thread import WatchThread
from rlengine.run.engine import Engine
from rlengine.testing import testing_plugin, tiny_config


def watcher_threads() -> list:
    return [t for t in threading.enumerate() if t.name == "rlengine-env-watch" and t.is_alive()]


def test_the_worker_drops_its_last_call_and_stops_when_told():
    class Payload:
        def __call__(self):
            return 1

    worker, payload = WatchThread(), Payload()
    assert worker.submit(payload).result(timeout=5) == 1
    alive = weakref.ref(payload)
    del payload
    gc.collect()
    assert alive() is None  # not kept by the idle thread's locals
    before = len(watcher_threads())
    worker.stop()
    for thread in watcher_threads():
        thread.join(timeout=0.2)
    assert len(watcher_threads()) < before


def test_in_process_runs_one_after_another_leave_no_watcher_thread(tmp_path):
    before = len(watcher_threads())
    for i in range(2):  # env_step_timeout > 0 (the default) watches the env from a thread
        Engine(tiny_config(str(tmp_path / f"run{i}")), extra_plugins=[("testing", testing_plugin())]).train()
    for thread in watcher_threads():
        thread.join(timeout=1.0)
    assert len(watcher_threads()) <= before
