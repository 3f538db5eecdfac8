"""Connecting to Ray: a local instance this run starts and owns, or a running cluster it joins.

Only what the run started is shut down: a Ray the caller had already
initialised (a notebook, a test's fixture) is left running, and joining a
cluster (``address = "auto"`` or ``host:port``) ends with a disconnect.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
from typing import Iterator

import ray

from rlengine import ConfigError

#: Set in every Ray worker this run starts, so runners print what rlengine prints, not TF's start-up.
WORKER_ENV = {"TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONWARNINGS": "ignore::DeprecationWarning"}

#: Ray starts its workers at niceness 15, below the driver. A run's runners are its collection, not
#: background work: on a busy machine niced runners starve (measured: with two other busy processes on 2
#: cores, two runners did not build within 120 s; at niceness 0 they build as the learner's process would).
LOCAL_SYSTEM_CONFIG = {"worker_niceness": 0}


def worker_options() -> dict:
    """``ray.init`` options every connection of ours uses: quiet workers, logs on the driver."""
    env = {k: os.environ.get(k, v) for k, v in WORKER_ENV.items()}
    return dict(include_dashboard=False, configure_logging=False, log_to_driver=True, runtime_env={"env_vars": env})


def start_local_ray(num_cpus: float) -> None:
    """A Ray of our own with ``num_cpus`` logical CPUs, even where another one runs (``address="local"``
    never joins it), its workers at the driver's priority."""
    ray.init(address="local", num_cpus=num_cpus, _system_config=LOCAL_SYSTEM_CONFIG, **worker_options())


class RayConnection:
    """``connect()`` once a run starts collecting, ``disconnect()`` when it stops."""

    def __init__(self, address: str):
        self.address = address
        self.owned = False  # this run called ray.init, so it calls ray.shutdown

    def connect(self) -> None:
        if ray.is_initialized():
            return
        _check_reachable(self.address)
        try:
            with _signal_handlers_kept():
                if self.address:
                    ray.init(address=self.address, **worker_options())  # a cluster's settings are its own
                else:
                    start_local_ray(os.cpu_count() or 1)
        except ConnectionError as exc:
            raise ConfigError(f"ray.address = {self.address!r}: no Ray cluster answered ({_first_line(exc)}); "
                              "start one with `ray start --head`, or leave ray.address empty for a local Ray") from None
        self.owned = True

    def disconnect(self) -> None:
        if self.owned and ray.is_initialized():
            ray.shutdown()  # a local Ray's processes end with it; a joined cluster keeps running
        self.owned = False


@contextlib.contextmanager
def _signal_handlers_kept() -> Iterator[None]:
    """Keep the run's SIGINT and SIGTERM handlers through ``ray.init``: Ray's core installs a crash handler
    for SIGTERM that prints a stack trace and kills the process, so the run could not checkpoint and stop."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    kept = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for number, handler in kept.items():
            if handler is not None:
                signal.signal(number, handler)


def _check_reachable(address: str, seconds: float = 5.0) -> None:
    """Refuse a ``host:port`` nobody listens on at once: ``ray.init`` would retry it for minutes."""
    host, _, port = address.rpartition(":")
    if not host or "://" in address or not port.isdigit():
        return  # "", "auto" (Ray looks it up and answers at once), or a client address
    try:
        socket.create_connection((host, int(port)), timeout=seconds).close()
    except OSError as exc:
        raise ConfigError(f"ray.address = {address!r}: nothing answers there ({exc.strerror or exc}); start the "
                          "cluster's head with `ray start --head`, or leave ray.address empty for a local Ray") from None


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
