"""An env runner: one Ray actor that collects unrolls with its own environment and policy copy.

The ray pipeline drives each runner so::

    runner = ray.remote(EnvRunner).options(num_cpus=..., max_restarts=...).remote(recipe)
    info = ray.get(runner.describe.remote())        # built: its pid, node and variable layout
    while training:
        unroll = ray.get(runner.sample.remote(request, [weights_ref], version, random_actions))

A runner builds everything itself, in its own process: the plugins (from the
run's :class:`~rlengine.plugin.recipe.PluginRecipe`), its batched
environment (guarded: restarts, step timeout, as a local one), the
transformer chain and the algorithm, whose specs it prepares by the same
dummy step as the driver. It loads new weights only when a request carries
a version it has not acted with, so every unroll reports the version that
chose all of its actions. Ray re-runs the constructor when it restarts a
runner; the restarted runner then starts fresh episodes.
"""

from __future__ import annotations

import os
import pickle
import socket
import sys
import time
import uuid
from typing import Any, NamedTuple

import attrs


@attrs.frozen
class RunnerRecipe:
    """What a runner is built from; it pickles (TF objects do not, so none is in it)."""

    index: int
    config: bytes  # the run's RunConfig, pickled: its plugin sections import TF, which must start quietly first
    plugins: Any  # PluginRecipe
    num_envs: int
    first_env_id: int
    num_cpus: float
    sys_path: tuple  # the driver's import path, so plugins and env modules it imports import here too


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

    def __init__(self, recipe: RunnerRecipe):
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        for path in reversed(recipe.sys_path):
            if path not in sys.path:
                sys.path.insert(0, path)
        self.recipe = recipe
        _start_tensorflow(max(1, round(recipe.num_cpus)))
        self._build(recipe)
        self.incarnation = uuid.uuid4().hex
        self.sequence = 0
        self.version = -1
        self.carry: Any = None

    def _build(self, recipe: RunnerRecipe) -> None:
        from rlengine.collect.distributions import Converters
        from rlengine.collect.faults import FaultWatch
        from rlengine.pipelines.sync.collector import Collector
        from rlengine.run.build import build_acting, make_environment
        from rlengine.run.specs import prepare_specs
        from rlengine_ray import weights

        config, plugins = pickle.loads(recipe.config), recipe.plugins.build()
        plugins.raise_failures()
        seed = config.train.seed + (_reseed() if _restarted() else 0)
        self.env = make_environment(config, plugins, recipe.num_envs, seed, recipe.first_env_id)
        raw_spec, action_spec = self.env.time_step_spec(), self.env.action_spec()
        self.chain, self.algorithm = build_acting(config, plugins, raw_spec, action_spec)
        converters = Converters(plugins.registries.distributions)
        names: dict = {"algorithm": config.train.algorithm, **dict(enumerate(config.train.transformers))}
        self.specs = prepare_specs(raw_spec, action_spec, self.chain, self.algorithm, converters, names)
        self.collector = Collector(self.env, self.chain, self.algorithm, self.specs, converters,
                                   config.train.unroll_length)
        self.faults = FaultWatch(self.env)  # the step timeout and env restarts, as in the sync pipeline
        self.variables = weights.acting_variables(self.algorithm)
        self.has_statistics = any(t.variables for t in self.chain.transformers)

    def describe(self) -> dict:
        """Who and where this runner is, and the variable layout the learner's weights must match."""
        import ray

        from rlengine_ray import weights

        return {"runner": self.recipe.index, "pid": os.getpid(), "host": socket.gethostname(),
                "node_id": ray.get_runtime_context().get_node_id(), "incarnation": self.incarnation,
                "variables": weights.layout(self.variables), "experience": repr(self.specs.experience)}

    def sample(self, request: int, weights_ref: list, version: int, random_actions: bool) -> Unroll:
        """One unroll with the policy of ``version`` (``weights_ref``: ``[ObjectRef]`` of its values)."""
        start = time.perf_counter()
        if version != self.version:
            self._load(weights_ref[0])
            self.version = version
        self.collector.random_actions.assign(random_actions)
        if self.carry is None:
            self.carry = self.faults.call(self.collector.start)
        before = self.chain.statistics() if self.has_statistics else []
        (experience, self.carry), dropped = self.faults.run(self.collector.run, self.carry)
        if dropped:  # the env was recreated mid-unroll: begin again from its fresh episodes
            self.carry = self.faults.call(self.collector.start)
        after = self.chain.statistics() if self.has_statistics else []
        import tensorflow as tf

        unroll = Unroll(request, self.recipe.index, self.incarnation, self.sequence, self.version, dropped,
                        [x.numpy() for x in tf.nest.flatten(experience)], (before, after),
                        self.faults.restarts, time.perf_counter() - start)
        self.sequence += 1
        return unroll

    def _load(self, ref: Any) -> None:
        import ray

        from rlengine_ray import weights

        values = ray.get(ref)
        weights.assign(self.variables, values["algorithm"])
        if values["statistics"]:
            self.chain.assign_statistics(values["statistics"])

    def close(self) -> None:
        self.faults.close()
        self.env.close()


def _start_tensorflow(threads: int) -> None:
    """Import TensorFlow and start its runtime sized for this actor, without its C++ start-up lines
    (each runner would print them again through Ray's log forwarding)."""
    from rlengine.quiet_tensorflow import import_tensorflow, quiet_stderr

    import_tensorflow()
    import tensorflow as tf

    try:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(max(2, threads))  # env calls run in the graph
    except RuntimeError:  # TF already started in this process (a runner built in the driver, by a test)
        pass
    from rlengine.run.runtime import prepare_runtime

    with quiet_stderr():  # the first op prints the CUDA probe's failure on machines without a GPU
        prepare_runtime()


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
