"""``rlengine train --seeds 0-31 --ray``: every seed's ``rlengine train`` as a Ray task, anywhere in the cluster.

The core's ``--seeds`` command does everything but start the runs: it lays
out ``--root-dir`` (``seed-N`` run directories, ``seed-N.log``), skips the
finished seeds, passes Ctrl-C on, and prints the summary. This module is the
launcher it is handed (``args.seed_launcher``, set by ``--ray``: :mod:`.commands`):
each seed is one Ray actor that runs ``rlengine train --seed N --root-dir
ROOT/seed-N`` as a child process on whichever node Ray places it, with the
CPUs and GPUs ``--ray-cpus`` / ``--ray-gpus`` ask for.

A Ray actor rather than a Tune trial: a seed needs no search or scheduler,
only a place to run, a way to pass Ctrl-C on, and a second try when its
node goes. Ray restarts an actor whose worker died and calls its ``train``
again (``MAX_RETRIES``); that child resumes the run from its last checkpoint,
as ``rlengine train`` does in any run directory that has one. A seed that
ended (finished or failed) is never retried, and the same command run again
skips the finished seeds, as the local ``--seeds`` does.

The run directories are written by the nodes, where the driver's
``--root-dir`` points: on a cluster that path must be one shared filesystem
(NFS, a mounted bucket) seen at the same path by every node.
"""

from __future__ import annotations

import atexit
import os
import signal
import socket
import subprocess
import sys
import time
from typing import Optional

import ray

from rlengine.api import dying_with_parent
from rlengine_ray.cluster import RayConnection

#: Tries of a seed whose Ray worker or node died, after the first; each resumes from the last checkpoint.
MAX_RETRIES = 3


class RayLauncher:
    """The core's seed launcher (``start`` and ``default_jobs``) on Ray."""

    def __init__(self, address: str, cpus: float, gpus: float):
        self.connection = RayConnection(address)
        self.cpus, self.gpus = cpus, gpus

    def default_jobs(self, pending: int) -> int:
        """Every pending seed at once: Ray queues those its nodes have no room for yet."""
        return max(1, pending)

    def start(self, argv: list, log_path: str, env: dict) -> "SeedTask":
        if not ray.is_initialized():
            self.connection.connect()
            atexit.register(self.connection.disconnect)
        threads = str(max(1, int(self.cpus)))  # TensorFlow's pools sized to the seed's CPUs, not the node's
        child_env = {"PYTHONUNBUFFERED": "1", "TF_NUM_INTRAOP_THREADS": threads, "TF_NUM_INTEROP_THREADS": threads}
        actor = SeedWorker.options(num_cpus=self.cpus, num_gpus=self.gpus, max_restarts=MAX_RETRIES,
                                   max_task_retries=MAX_RETRIES, max_concurrency=2).remote()
        return SeedTask(actor, actor.train.remote(argv, log_path, child_env), log_path)


class SeedTask:
    """A seed's Ray actor, seen as the core sees a child process (``subprocess.Popen``'s members it uses)."""

    def __init__(self, actor: "ray.actor.ActorHandle", ref: "ray.ObjectRef", log_path: str):
        self.actor, self.ref, self.log_path = actor, ref, log_path
        self.pid = f"Ray actor {actor._actor_id.hex()[:12]}"
        self.returncode: Optional[int] = None

    def poll(self) -> Optional[int]:
        if self.returncode is None and ray.wait([self.ref], timeout=0)[0]:
            self.returncode = self._status()
            ray.kill(self.actor)  # its CPUs and GPUs go to the next seed
        return self.returncode

    def wait(self, timeout: Optional[float] = None) -> int:
        if not ray.wait([self.ref], timeout=timeout)[0]:
            raise subprocess.TimeoutExpired(self.pid, timeout or 0)
        return self.poll()  # type: ignore[return-value]  # ready: poll sets it

    def send_signal(self, number: int) -> None:
        """Ctrl-C or SIGTERM, passed to the child: it checkpoints and stops (a second one aborts it)."""
        self.actor.signal.remote(number)

    def kill(self) -> None:
        ray.kill(self.actor, no_restart=True)

    def _status(self) -> int:
        try:
            return int(ray.get(self.ref))
        except ray.exceptions.RayError as exc:  # its worker died on every try
            line = (str(exc).strip().splitlines() or [""])[0]
            with open(self.log_path, "a", encoding="utf-8") as log:  # the core names a failed seed by this line
                log.write(f"rlengine: error: Ray gave up on this seed after {MAX_RETRIES + 1} tries "
                          f"({type(exc).__name__}: {line})\n")
            return 1


@ray.remote
class SeedWorker:
    """(On a Ray node) one seed's ``rlengine train`` as a child process; restarted by Ray if its worker dies.

    Two calls at a time (``max_concurrency=2``): :meth:`signal` reaches the
    child while :meth:`train` waits for it. The child dies with this worker
    (``PR_SET_PDEATHSIG``), so the retried :meth:`train` never finds the run
    still held by a child of the previous try.
    """

    def __init__(self) -> None:
        self.child: Optional[subprocess.Popen] = None

    def train(self, argv: list, log_path: str, env: dict) -> int:
        with open(log_path, "a", encoding="utf-8") as log:
            node = ray.get_runtime_context().get_node_id()  # hosts may run several nodes: the node's own id
            log.write(f"== {time.strftime('%Y-%m-%d %H:%M:%S')}: on Ray node {socket.gethostname()} {node} "
                      f"(worker pid {os.getpid()})\n")
            log.flush()
            self.child = subprocess.Popen([sys.executable, "-m", "rlengine.cli", *argv], stdin=subprocess.DEVNULL,
                                          stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **env},
                                          start_new_session=True, preexec_fn=dying_with_parent(signal.SIGKILL))
        return self.child.wait()

    def signal(self, number: int) -> None:
        if self.child is not None and self.child.poll() is None:
            self.child.send_signal(number)


