"""The child processes of ``rlengine train --seeds``: started up to ``--jobs`` at a time, watched, stopped.

:func:`train_seeds` is the command; what a seed's run is and where it goes
is :mod:`rlengine.commands.seeds`.

Each child runs in a session of its own, so a Ctrl-C in the terminal reaches
only this process, which passes it on: every child checkpoints after its
current iteration and stops, and no new seed starts (a second Ctrl-C, passed
on too, aborts them at once, as it does a single run). SIGTERM is passed on
the same way. On Linux a child also gets SIGTERM when this process dies
without passing anything on (``kill -9``), so no run is left training.

Children running side by side share the cores: each gets TensorFlow thread
pools of ``cores // jobs`` (``TF_NUM_INTRAOP_THREADS``,
``TF_NUM_INTEROP_THREADS``) unless the environment sets them already.
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Optional

import attrs

from rlengine.api.processes import dying_with_parent
from rlengine.commands import seeds
from rlengine.commands.seeds import format_number, summary_of
from rlengine.errors import RLEngineError, TrainingInterrupted

#: How a child is started: the ``rlengine`` command line of this Python (tests point it at a wrapper).
CHILD_COMMAND = [sys.executable, "-m", "rlengine.cli"]
POLL_SECONDS = 0.2
LOG_HEADER = "== "  # starts the line a log gets before each child's output
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: Exit statuses of a child that was stopped by a signal (after its checkpoint, or at once by a second one).
INTERRUPTED = {128 + s for s in STOP_SIGNALS} | {-s for s in STOP_SIGNALS}
SIGNAL_NUMBERS = {int(s) for s in signal.Signals}


@attrs.define(eq=False)
class SeedRun:
    """One seed's run: its directory, log and child process, and how it ended."""

    seed: int
    run_dir: str
    log_path: str
    argv: list  # the child's rlengine words
    resuming: bool = False
    status: str = "pending"  # skipped | running, then finished | failed | interrupted; or not started
    process: Optional[subprocess.Popen] = None
    started: float = 0.0
    seconds: Optional[float] = None
    error: str = ""  # a failed seed's one line: the last line of its log
    result: dict = attrs.field(factory=dict)  # env_steps, last_eval (seeds.summary_of)
    signals_sent: int = 0


class SeedsFailed(RLEngineError):
    """One or more seeds' runs failed (the others went on)."""


class SeedsInterrupted(TrainingInterrupted):
    """SIGINT or SIGTERM stopped the seeds' runs; each running child checkpointed first."""

    def __init__(self, signal_number: int, parent: str, seeds: list):
        self.signal_number, self.root_dir, self.checkpoint = signal_number, parent, None
        self.signal_name = signal.Signals(signal_number).name
        RLEngineError.__init__(self, f"training of seed{'s' * (len(seeds) != 1)} {', '.join(map(str, seeds)) or '-'} "
                                     f"stopped by {self.signal_name}; each checkpointed its run (logs: "
                                     f"{os.path.join(parent, 'seed-N.log')})")


class SignalRecorder:
    """SIGINT / SIGTERM handlers that only record the signal; the loop passes each on to every child."""

    def __init__(self) -> None:
        self.signals: list = []
        self._previous: dict = {}

    def __enter__(self) -> "SignalRecorder":
        if threading.current_thread() is threading.main_thread():
            for number in STOP_SIGNALS:
                self._previous[number] = signal.signal(number, self._record)
        return self

    def __exit__(self, *exc: object) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)

    def _record(self, number: int, frame: object) -> None:
        self.signals.append(number)

    def pass_on(self, runs: list) -> None:
        """Send each child the signals it has not had yet (a child started meanwhile gets them all)."""
        for run in runs:
            while run.signals_sent < len(self.signals):
                _send(run.process, self.signals[run.signals_sent])
                run.signals_sent += 1


def _send(process: Optional[subprocess.Popen], number: int) -> None:
    if process is not None and process.poll() is None:
        try:
            process.send_signal(number)
        except ProcessLookupError:  # it ended just now
            pass




def child_env(parallel: int) -> dict:
    """The children's environment: unbuffered output (the logs stay current), thread pools shared out."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    if parallel > 1:
        threads = str(max(1, seeds.cores() // parallel))
        for name in ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS"):
            env.setdefault(name, threads)
    return env


class LocalLauncher:
    """Where seeds run by default: a child process of this one on this machine.

    Another launcher (``args.seed_launcher``, set by a command extending
    ``train``, e.g. the ray plugin's ``--ray``) has the same two members: its
    ``start`` returns an object with Popen's ``pid``, ``returncode``, ``poll``,
    ``send_signal``, ``wait`` and ``kill``.
    """

    def default_jobs(self, pending: int) -> int:
        return seeds.default_jobs()

    def start(self, argv: list, log_path: str, env: dict) -> subprocess.Popen:
        """``rlengine ARGV`` as a child, its output appended to ``log_path`` (which has its header)."""
        with open(log_path, "a", encoding="utf-8") as log:  # the child writes through its own copy
            return subprocess.Popen(
                [*CHILD_COMMAND, *argv], stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env=env, start_new_session=True, preexec_fn=dying_with_parent(signal.SIGTERM))


def start(run: SeedRun, env: dict, launcher: Any = None) -> None:
    """Start the child of ``run``, its output appended to ``run.log_path``; a start that fails is a failed seed."""
    run.started = time.monotonic()
    try:
        os.makedirs(os.path.dirname(run.log_path) or ".", exist_ok=True)
        with open(run.log_path, "a", encoding="utf-8") as log:
            log.write(f"{LOG_HEADER}{time.strftime('%Y-%m-%d %H:%M:%S')}: rlengine {shlex.join(run.argv)}\n")
        run.process = (launcher or LocalLauncher()).start(run.argv, run.log_path, env)
    except OSError as exc:
        run.status, run.seconds, run.error = "failed", 0.0, f"could not start: {exc}"
        print(f"rlengine: seed {run.seed} failed: {run.error}", flush=True)
        return
    run.status = "running"
    verb = "resuming" if run.resuming else "started"
    print(f"rlengine: seed {run.seed} {verb} (pid {run.process.pid}) into {run.run_dir}; log {run.log_path}",
          flush=True)


def finish(run: SeedRun) -> None:
    """Record how the child of ``run`` ended, and say so in one line."""
    assert run.process is not None
    code = run.process.returncode
    run.seconds = time.monotonic() - run.started
    run.status = "finished" if code == 0 else "interrupted" if code in INTERRUPTED else "failed"
    run.result = summary_of(run.run_dir)
    if run.status == "failed":
        how = f"killed by {signal.Signals(-code).name}" if code < 0 and -code in SIGNAL_NUMBERS else f"exit status {code}"
        run.error = f"{how}: {last_line(run.log_path) or 'no output'}"
    print(f"rlengine: seed {run.seed} {run.status} after {run.seconds:.1f} s: " + (
        run.error if run.status == "failed" else f"{format_number(run.result['env_steps'], 'd')} env steps, "
        f"last evaluation return {format_number(run.result['last_eval'])}"), flush=True)


def last_line(path: str) -> str:
    """The child's last non-empty line in a log (after the newest header), without ``rlengine: error:``."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - 8192))
            lines = [line.strip() for line in f.read().decode("utf-8", "replace").splitlines() if line.strip()]
    except OSError:
        return ""
    last = lines[-1] if lines else ""
    return "" if last.startswith(LOG_HEADER) else last.removeprefix("rlengine: error: ")


def stop_all(running: list, wait_seconds: float = 120.0) -> None:
    """SIGTERM every child still running, wait for its checkpoint, then kill one that does not stop."""
    for run in running:
        _send(run.process, signal.SIGTERM)
    deadline = time.monotonic() + wait_seconds
    for run in running:
        try:
            run.process.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            run.process.kill()
            run.process.wait()


def train_seeds(args: argparse.Namespace, overrides: list) -> int:
    """``rlengine train --seeds``: check, lay out and run every seed (:mod:`rlengine.commands.seeds`)."""
    seeds.check_flags(args, overrides)
    numbers = seeds.parse_seeds(args.seeds)
    train = seeds.effective_train(args.config, overrides)
    parent = seeds.parent_dir(args, train)
    seeds.check_parent(parent)
    runs = []
    for seed in numbers:
        run_dir = os.path.join(parent, f"seed-{seed}")
        run = SeedRun(seed, run_dir, f"{run_dir}.log", seeds.child_argv(args, overrides, seed, run_dir))
        run.resuming = os.path.isdir(run_dir)
        if run.resuming and seeds.is_finished(run_dir, train):
            run.status = "skipped"
        runs.append(run)
    launcher = getattr(args, "seed_launcher", None) or LocalLauncher()
    pending = sum(run.status == "pending" for run in runs)
    return run_seeds(runs, parent, launcher.default_jobs(pending) if args.jobs is None else args.jobs, launcher)


def run_seeds(runs: list, parent: str, jobs: int, launcher: Any = None) -> int:
    """Run the pending seeds, ``jobs`` at a time; print the summary; 0, or raise naming the failures."""
    todo = [run for run in runs if run.status == "pending"]
    parallel = max(1, min(jobs, len(todo)))
    print(f"rlengine: {len(runs)} seed{'s' * (len(runs) != 1)} into {parent}: {len(todo)} to run, "
          f"{parallel} at a time", flush=True)
    for run in runs:
        if run.status == "skipped":
            run.result = summary_of(run.run_dir)
            print(f"rlengine: seed {run.seed} finished already in {run.run_dir}: skipped", flush=True)
    with SignalRecorder() as recorder:
        run_all(todo, parallel, child_env(parallel), recorder, launcher)
    for run in todo:
        run.status = "not started"
    print_summary(runs)
    return outcome(runs, parent, recorder.signals)


def run_all(todo: list, parallel: int, env: dict, recorder: SignalRecorder, launcher: Any = None) -> None:
    """Start children from ``todo`` (taking them out) while fewer than ``parallel`` run, until all ended.

    After a stop signal no new child starts; the running ones get the signal and are waited for.
    """
    running: list[SeedRun] = []
    try:
        while running or (todo and not recorder.signals):
            while todo and len(running) < parallel and not recorder.signals:
                run = todo.pop(0)
                start(run, env, launcher)
                if run.process is not None:
                    running.append(run)
            recorder.pass_on(running)
            for run in [r for r in running if r.process is not None and r.process.poll() is not None]:
                running.remove(run)
                finish(run)
            if running:
                time.sleep(POLL_SECONDS)
    finally:
        stop_all(running)  # only after an unexpected error: a normal end leaves none running


def print_summary(runs: list) -> None:
    """One row per seed: status, env steps, last evaluation return, seconds, run directory."""
    header = ("seed", "status", "env steps", "last eval", "time (s)", "run")
    rows = [(str(r.seed), r.status, format_number(r.result.get("env_steps"), "d"),
             format_number(r.result.get("last_eval")), format_number(r.seconds), r.run_dir) for r in runs]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    print()
    for row in [header, *rows]:
        print("  ".join(cell.rjust(w) if i in (0, 2, 3, 4) else cell.ljust(w)
                        for i, (cell, w) in enumerate(zip(row, widths))).rstrip(), flush=True)


def outcome(runs: list, parent: str, signals: list) -> int:
    """0 when every seed finished; else the interruption, or the failed seeds, as one error."""
    if signals:
        raise SeedsInterrupted(signals[0], parent, [r.seed for r in runs if r.status == "interrupted"])
    failed = [r for r in runs if r.status == "failed"]
    stopped = [r for r in runs if r.status == "interrupted"]  # a signal sent to the child itself
    if failed or stopped:
        named = [f"seed {r.seed} ({r.error})" for r in failed]
        named += [f"seed {r.seed} (stopped by a signal: the same command resumes it)" for r in stopped]
        raise SeedsFailed(f"{len(failed) + len(stopped)} of {len(runs)} seeds did not finish: {'; '.join(named)}; "
                          f"logs: {os.path.join(parent, 'seed-N.log')}")
    return 0
