"""An env runner: one Ray actor that collects unrolls with its own environment and policy copy.

The ray pipeline drives each runner so::

    runner = ray.remote(EnvRunner).options(num_cpus=..., max_restarts=...).remote(index, recipe, ...)
    info = ray.get(runner.describe.remote())        # built: its pid, node and variable layout
    while training:
        unroll = ray.get(runner.sample.remote(request, [weights_ref], version, random_actions))

Everything is built in the actor's own process, by the core's
:class:`rlengine.RemoteCollector` (the plugins from the run's recipe, the
guarded environment, the transformers and the algorithm, whose specs it
prepares by the same dummy step as the driver). A runner loads new weights
only when a request carries a version it has not acted with, so every
unroll reports the version that chose all of its actions. Ray re-runs the
constructor when it restarts a runner; the restarted runner then starts
fresh episodes, from other seeds.
"""

from __future__ import annotations

import os
import socket
import sys
import time
import uuid
from typing import Any, NamedTuple

import attrs


class Unroll(NamedTuple):
    """One runner's answer to one sample request."""

    request: int  # the driver's request number, echoed
    runner: int
    incarnation: str  # a new one each time the runner is (re)built
    sequence: int  # unrolls this incarnation returned before this one
    version: int  # the policy version that chose every action of the unroll
    dropped: bool  # the env was recreated during the unroll: neither store nor train it
    experience: list  # tf.nest.flatten of the [T + 1, B] rows, numpy
    statistics: tuple  # the transformer chain's statistics (before, after) the unroll
    env_restarts: int
    seconds: float  # spent collecting it


class EnvRunner:
    """Collects unrolls in a Ray actor (the class is plain Python: ``ray.remote`` wraps it)."""

    def __init__(self, index: int, recipe: Any, num_cpus: float, sys_path: tuple):
        for path in reversed(sys_path):  # the driver's import path: plugin and env modules it imported
            if path not in sys.path:
                sys.path.insert(0, path)
        if _restarted():
            recipe = attrs.evolve(recipe, seed_offset=_reseed())
        from rlengine import RemoteCollector

        self.index = index
        self.collector = RemoteCollector(recipe, threads=max(1, round(num_cpus)))
        self.incarnation = uuid.uuid4().hex
        self.sequence = 0
        self.version = -1

    def describe(self) -> dict:
        """Who and where this runner is, and the variable layout the learner's weights must match."""
        import ray

        return {"runner": self.index, "pid": os.getpid(), "host": socket.gethostname(),
                "node_id": ray.get_runtime_context().get_node_id(), "incarnation": self.incarnation,
                "variables": self.collector.weights.layout(),
                "experience": repr(self.collector.specs.experience), "rows": self._rows()}

    def _rows(self) -> dict:
        """What the learner's episode statistics need of this runner's environment (its rows' groups)."""
        env = self.collector.env
        groups = getattr(env, "row_groups", None)
        return {"env_id": env.env_id, "num_envs": env.num_envs, "copy_ids": [int(i) for i in env.copy_ids],
                "row_groups": None if groups is None else list(groups),
                "episode_outcomes": bool(getattr(env, "episode_outcomes", False))}

    def sample(self, request: int, weights_ref: list, version: int, random_actions: bool) -> Unroll:
        """One unroll with the policy of ``version`` (``weights_ref``: ``[ObjectRef]`` of its values)."""
        start = time.perf_counter()
        if version != self.version:
            import ray

            self.collector.load(ray.get(weights_ref[0]))
            self.version = version
        experience, dropped, statistics = self.collector.collect(random_actions)
        unroll = Unroll(request, self.index, self.incarnation, self.sequence, self.version, dropped, experience,
                        statistics, self.collector.env_restarts, time.perf_counter() - start)
        self.sequence += 1
        return unroll


def _restarted() -> bool:
    """Whether Ray is re-running this actor's constructor after a failure."""
    import warnings

    import ray

    try:
        with warnings.catch_warnings():  # the property reads a deprecated attribute inside Ray itself
            warnings.simplefilter("ignore")
            return bool(ray.get_runtime_context().was_current_actor_reconstructed)
    except Exception:  # not in an actor (a test building the class directly)
        return False


def _reseed() -> int:
    """A seed offset for a restarted runner, so it does not replay the episodes its first life began with."""
    return int.from_bytes(os.urandom(3), "little") + 1
