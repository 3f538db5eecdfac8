"""Collection in another process: what a remote env runner builds, from a recipe that pickles.

Pipelines that collect elsewhere (``rlengine-ray``'s runners) need the run's
environment, transformers and policy rebuilt in a process that shares no
TensorFlow object with the learner (TF objects do not pickle). The driver
asks its :class:`~rlengine.api.pipeline.PipelineContext` for a recipe; the
remote process builds a :class:`RemoteCollector` from it (a
:class:`~rlengine.api.pipeline.CollectorRecipe`)::

    recipe = context.collector_recipe(num_envs, first_env_id)     # in the driver; it pickles
    collector = RemoteCollector(recipe, threads=1)                # in the remote process
    collector.load(values)                                        # ActingWeights(...).read() in the driver
    experience, dropped, statistics = collector.collect(random_actions=False)

The collector prepares its specs by the same dummy step as the driver and
unrolls with the synchronous pipeline's collector, its environment guarded
as a local one is (restarts, step timeout, finite check).
"""

from __future__ import annotations

import pickle
from typing import Any

from rlengine.api.pipeline import CollectorRecipe


def acting_variables(algorithm: Any) -> list:
    """The algorithm's variables that acting may read: all but its optimizers' (slots, step counters),
    in ``tf.Module`` order, which is the same wherever the algorithm is built from the same config and specs."""
    skipped = set()
    for value in vars(algorithm).values():
        if hasattr(value, "apply_gradients"):
            variables = value.variables() if callable(value.variables) else value.variables
            skipped |= {v.ref() for v in variables}
    return [v for v in algorithm.variables if v.ref() not in skipped]


class ActingWeights:
    """What a policy copy elsewhere acts with: the acting variables and the transformers' statistics.

    Built once on each side from the same algorithm and chain, so the lists line up::

        values = ActingWeights(algorithm, chain).read()      # the learner: numpy, once per policy version
        ActingWeights(algorithm, chain).assign(values)       # a remote collector, before it acts
    """

    def __init__(self, algorithm: Any, chain: Any):
        self.variables = acting_variables(algorithm)
        self.chain = chain
        self.has_statistics = any(t.variables for t in chain.transformers)

    def statistics(self) -> list:
        """The transformers' statistics (numpy), or [] when none has any."""
        return self.chain.statistics() if self.has_statistics else []

    def read(self) -> dict:
        return {"algorithm": [v.numpy() for v in self.variables], "statistics": self.statistics()}

    def assign(self, values: dict) -> None:
        """Act with ``values`` (what :meth:`read` returned on the other side) from now on."""
        for variable, value in zip(self.variables, values["algorithm"]):
            variable.assign(value)
        if values["statistics"]:
            self.chain.assign_statistics(values["statistics"])

    def layout(self) -> list[tuple[tuple, str]]:
        """``(shape, dtype)`` of each acting variable: the learner's and a remote collector's must agree."""
        return [(tuple(v.shape), v.dtype.name) for v in self.variables]


class RemoteCollector:
    """A run's environment, transformers and policy, built in this process from a :class:`CollectorRecipe`."""

    def __init__(self, recipe: CollectorRecipe, threads: int = 1):
        _start_tensorflow(threads)
        from rlengine.collect.converters import Converters
        from rlengine.collect.faults import FaultWatch
        from rlengine.pipelines.sync.collector import Collector
        from rlengine.plugin.manager import rebuild_plugins
        from rlengine.run.build import build_acting, make_environment
        from rlengine.run.specs import prepare_specs

        config, plugins = pickle.loads(recipe.config), rebuild_plugins(recipe.plugins)
        plugins.report_failures()  # as the driver did: a plugin this run does not use is left out
        train = config.train
        self.env = make_environment(config, plugins, recipe.num_envs, train.seed + recipe.seed_offset,
                                    recipe.first_env_id)
        raw_spec, action_spec = self.env.time_step_spec(), self.env.action_spec()
        self.chain, self.algorithm = build_acting(config, plugins, raw_spec, action_spec)
        converters = Converters(plugins.registries.distributions)
        names: dict = {"algorithm": train.algorithm, **dict(enumerate(train.transformers))}
        self.specs = prepare_specs(raw_spec, action_spec, self.chain, self.algorithm, converters, names)
        self.collector = Collector(self.env, self.chain, self.algorithm, self.specs, converters, train.unroll_length,
                                   jit_compile=train.jit_compile_unroll)  # a graph environment's unroll, as locally
        self.faults = FaultWatch(self.env)  # the step timeout and env restarts, as in the sync pipeline
        self.weights = ActingWeights(self.algorithm, self.chain)
        self.carry: Any = None

    @property
    def env_restarts(self) -> int:
        return self.faults.restarts

    def load(self, values: dict) -> None:
        """Act with ``values`` (``ActingWeights(...).read()`` in the driver) from now on."""
        self.weights.assign(values)

    def collect(self, random_actions: bool = False) -> tuple[list, bool, tuple]:
        """One unroll: ``(flat numpy rows [T + 1, B], dropped, (statistics before, after))``.

        ``dropped``: the environment was recreated during it (neither store nor
        train it); the next unroll then begins from fresh episodes.
        """
        import tensorflow as tf

        self.collector.random_actions.assign(random_actions)
        if self.carry is None:
            self.carry = self.faults.call(self.collector.start)
        before = self.weights.statistics()
        (experience, self.carry), dropped = self.faults.run(self.collector.run, self.carry)
        if dropped:
            self.carry = self.faults.call(self.collector.start)
        after = self.weights.statistics()
        return [x.numpy() for x in tf.nest.flatten(experience)], dropped, (before, after)

    def close(self) -> None:
        self.faults.close()
        self.env.close()


def _start_tensorflow(threads: int) -> None:
    """Import TensorFlow and start its runtime with ``threads`` threads, without its C++ start-up lines
    (each remote process would print them again)."""
    from rlengine.quiet_tensorflow import import_tensorflow, quiet_stderr

    import_tensorflow()
    import tensorflow as tf

    try:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(max(2, threads))  # env calls run in the graph
    except RuntimeError:  # TF already started in this process (a collector built in the driver, by a test)
        pass
    from rlengine.run.process.runtime import start_runtime

    with quiet_stderr():  # the first op prints the CUDA probe's failure on machines without a GPU
        start_runtime()
