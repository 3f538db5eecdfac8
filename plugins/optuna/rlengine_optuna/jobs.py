"""``rlengine tune --jobs N``: N processes on this machine training the trials of one study at a time.

The tune process (job 0) holds the tune dir (``tune.lock``), repairs the
journal and queues the trials an earlier session left running; then it
starts jobs 1..N-1, the same ``rlengine tune`` command without ``--jobs``
and with ``RLENGINE_TUNE_JOB=K`` in its environment, and trains trials itself. Every job asks trials of, and tells results
to, the one study in ``study.log``: Optuna's journal file takes writers from
several processes (each append holds its lock file). Asking is serialised by
``ask.lock`` so the jobs together start no more than ``--trials`` trials.

The random startup trials are drawn by trial number (:mod:`rlengine_optuna.sampling`), so the jobs
train the startup trials a tune without ``--jobs`` trains; TPE's own seed is each job's
(:func:`rlengine_optuna.tuner.session_seed` mixes in its index).
Each job runs in a session of its own, so Ctrl-C reaches only job 0, which
passes one SIGINT on (:func:`stop_jobs`): each job queues its running trial
again, as a single tune does; a job also gets SIGINT when job 0 dies. A job
that is killed leaves its trial RUNNING; the next session queues it again. TensorFlow's thread pools are shared out
as ``rlengine train --seeds`` shares them (``cores // N`` each).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
import sys
from typing import Iterator, Sequence

from rlengine.api import dying_with_parent

ASK_LOCK = "ask.lock"
INDEX_VARIABLE = "RLENGINE_TUNE_JOB"  # read by rlengine_optuna.command.job_index


def job_argv(argv: Sequence[str]) -> list:
    """The ``rlengine`` words of the other jobs: the tune's own, without ``--jobs``."""
    words, skip = [], False
    for word in argv:
        if skip:
            skip = False
        elif word == "--jobs":
            skip = True
        elif not word.startswith("--jobs="):
            words.append(word)
    return words


def start_jobs(argv: Sequence[str], jobs: int) -> list:
    """Start jobs 1..``jobs``-1 (this process is job 0); their output goes to this process's."""
    threads = str(max(1, len(os.sched_getaffinity(0)) // jobs)) if hasattr(os, "sched_getaffinity") else "1"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    for name in ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS"):
        env.setdefault(name, threads)
    return [subprocess.Popen([sys.executable, "-m", "rlengine.cli", *job_argv(argv)],
                             env={**env, INDEX_VARIABLE: str(index)}, stdin=subprocess.DEVNULL,
                             start_new_session=True, preexec_fn=dying_with_parent(signal.SIGINT))
            for index in range(1, jobs)]


def wait_jobs(processes: list) -> list:
    """Wait for every job; the one-line notes of those that did not end well."""
    notes = []
    for index, process in enumerate(processes, 1):
        code = process.wait()
        if code != 0:
            notes.append(f"tune job {index} (pid {process.pid}) ended with status {code}")
    return notes


def stop_jobs(processes: list) -> None:
    """SIGINT to every job still running (each queues its trial again), then wait for them."""
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
    for process in processes:
        process.wait()


@contextlib.contextmanager
def asking(tune_dir: str) -> Iterator[None]:
    """Hold ``ask.lock`` while one job counts the trials and asks for the next."""
    fd = os.open(os.path.join(tune_dir, ASK_LOCK), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


