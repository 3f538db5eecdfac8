"""Builds a run's components from its config and the loaded plugins."""

from __future__ import annotations

from typing import Any, Optional

import attrs

from rlengine.async_pipeline import AsyncPipeline, thread_layout
from rlengine.config import AsyncConfig, RunConfig
from rlengine.distributions import Converters
from rlengine.driver import SyncDriver
from rlengine.errors import ConfigError
from rlengine.evaluator import Evaluator
from rlengine.faults import GuardedEnvironment
from rlengine.interfaces import Algorithm, Environment
from rlengine.learner import Learner
from rlengine.pipelines import OffPolicyPipeline, OnPolicyPipeline, ReplayAllPipeline
from rlengine.plugins import Plugins
from rlengine.runtime import prepare_runtime
from rlengine.specs import RunSpecs, check_nest, prepare_specs
from rlengine.transformers import TransformerChain

EVAL_SEED_OFFSET = 1_000_003  # evaluation copies never share seeds with training copies
MAX_EVAL_COPIES = 32


@attrs.define
class Components:
    """Everything a run steps, trains and writes with."""

    env: Environment  # the first (for the sync driver, the only) training environment
    eval_env: Environment
    chain: TransformerChain
    algorithm: Algorithm
    converters: Converters
    specs: RunSpecs
    driver: Optional[SyncDriver]  # None for the async driver
    learner: Learner
    evaluator: Evaluator
    writers: list
    pipeline: Any
    buffer: Any  # the replay buffer of off-policy algorithms, else None

    def write(self, metrics: dict) -> None:
        for writer in self.writers:
            writer.write(metrics)

    def close(self) -> None:
        """Close writers and environments; every one is tried even if one fails."""
        errors = []
        stop = getattr(self.pipeline, "stop", None)  # threads first: they may be stepping the envs
        if stop is not None:
            stop()
        envs = getattr(self.pipeline, "envs", [self.env])
        for closable in [*self.writers, *envs, self.eval_env]:
            try:
                closable.close()
            except Exception as exc:  # keep closing the rest
                errors.append(exc)
        if errors:
            raise errors[0]


def environment_class(config: RunConfig, plugins: Plugins) -> tuple[str, type[Environment]]:
    """(section name, class) of the run's environment: by name, else the provider."""
    envs = plugins.registries.environments
    name = config.train.env if config.train.env in envs else config.train.env_provider
    return name, envs.get(name).obj


def make_environment(config: RunConfig, plugins: Plugins, num_envs: int, seed: int,
                     first_env_id: int = 0, evaluation: bool = False) -> Environment:
    """The plugin's environment inside a :class:`GuardedEnvironment` (restarts, timeout, finite check).

    Evaluation environments are never restarted: the evaluator's episode
    accounting does not survive a restart mid-evaluation.
    """
    name, cls = environment_class(config, plugins)
    cfg, section = config.train, config.section(name, cls.config_class)

    def factory(env_seed: int) -> Environment:
        return cls(env_id=cfg.env, num_envs=num_envs, seed=env_seed, first_env_id=first_env_id, config=section)

    label = f"{'evaluation ' if evaluation else ''}environment {cfg.env!r}"
    return GuardedEnvironment(factory, label, seed, max_restarts=0 if evaluation else cfg.max_env_restarts,
                              step_timeout=cfg.env_step_timeout, check_finite=cfg.check_observations,
                              restarts_key=None if evaluation else "train.max_env_restarts")


def make_training_environments(config: RunConfig, plugins: Plugins, algorithm_cls: type[Algorithm]) -> list:
    """One batched environment for the sync driver; one per env thread for the async one."""
    cfg = config.train
    if cfg.driver == "sync":
        return [make_environment(config, plugins, cfg.num_envs, cfg.seed)]
    layout = thread_layout(cfg, config.section("async", AsyncConfig), not algorithm_cls.off_policy)
    envs: list = []
    try:
        for batch, first in layout:
            envs.append(make_environment(config, plugins, batch, cfg.seed, first))
    except BaseException:
        for env in envs:
            env.close()
        raise
    return envs


def check_names(config: RunConfig, plugins: Plugins) -> None:
    """Fail early, with close matches, on any plugin name the config uses but nobody registered, and on
    async settings that cannot run; then size TensorFlow's runtime for the run."""
    cfg, reg = config.train, plugins.registries
    algorithm_class = reg.algorithms.get(cfg.algorithm).obj
    environment_class(config, plugins)
    for name in cfg.transformers:
        reg.transformers.get(name)
    for name in cfg.writers:
        reg.writers.get(name)
    if cfg.driver == "async":  # settings that cannot run are refused before anything is written
        thread_layout(cfg, config.section("async", AsyncConfig), not algorithm_class.off_policy)
    prepare_runtime(runtime_threads(config))


def runtime_threads(config: RunConfig) -> int:
    """Threads the run needs in TensorFlow's inter-op pool (0: the default pool will do)."""
    if config.train.driver != "async":
        return 0
    # Every env thread may be stepping (holding a pool thread) at once; one more keeps the actors and the
    # learner moving meanwhile. Fewer only serialises (queue waits hold no pool thread), more slows the learner.
    return config.section("async", AsyncConfig).num_env_threads + 1


def build_components(config: RunConfig, plugins: Plugins, root_dir: str, writers: bool = True) -> Components:
    prepare_runtime(runtime_threads(config))  # before the first op (done already when an Engine built it)
    cfg, reg = config.train, plugins.registries
    algorithm_cls = reg.algorithms.get(cfg.algorithm).obj
    transformer_classes = [(n, reg.transformers.get(n).obj) for n in cfg.transformers]
    writer_classes = [(n, reg.writers.get(n).obj) for n in cfg.writers] if writers else []
    envs = make_training_environments(config, plugins, algorithm_cls)
    env = envs[0]
    env_name = environment_class(config, plugins)[0]
    eval_env = None
    try:
        eval_copies = min(cfg.num_eval_episodes, MAX_EVAL_COPIES)
        eval_env = make_environment(config, plugins, eval_copies, cfg.seed + EVAL_SEED_OFFSET, evaluation=True)
        raw_spec = env.time_step_spec()
        chain = TransformerChain(_transformers(config, transformer_classes, raw_spec.observation))
        time_step_spec = raw_spec._replace(
            observation=TransformerChain.output_spec_of(chain.transformers, raw_spec.observation))
        algorithm = algorithm_cls(time_step_spec, env.action_spec(), config.section(cfg.algorithm, algorithm_cls.config_class))
        converters = Converters(reg.distributions)
        check_nest(f"environment {env_name!r}", "reset() time step", raw_spec, env.reset())
        names: dict = {"algorithm": cfg.algorithm, **dict(enumerate(cfg.transformers))}
        specs = prepare_specs(raw_spec, env.action_spec(), chain, algorithm, converters, names)
        algorithm.build()
        if cfg.driver == "async":  # its env threads do the collecting: no sync driver
            driver = None
            pipeline, learner, buffer = make_async_pipeline(config, envs, chain, algorithm, specs, converters)
        else:
            driver = SyncDriver(env, chain, algorithm, specs, converters, cfg.unroll_length)
            pipeline, learner, buffer = make_pipeline(config, algorithm, specs, converters, driver)
        evaluator = Evaluator(eval_env, chain, algorithm, cfg.num_eval_episodes)
        writer_objects = [cls(root_dir, config.section(n, cls.config_class), total_env_steps=cfg.num_env_steps)
                          for n, cls in writer_classes]
    except BaseException:
        for e in envs:
            e.close()
        if eval_env is not None:
            eval_env.close()
        raise
    return Components(env, eval_env, chain, algorithm, converters, specs, driver, learner, evaluator, writer_objects,
                      pipeline, buffer)


def make_pipeline(config: RunConfig, algorithm: Algorithm, specs: RunSpecs, converters: Converters,
                  driver: SyncDriver) -> tuple:
    """The pipeline the algorithm and config ask for, with its learner and replay buffer (or None)."""
    from rlengine.replay import ReplayBuffer

    if algorithm.off_policy:
        buffer = make_replay_buffer(config, algorithm, specs)
        learner = Learner(algorithm, specs, converters, buffer)
        return OffPolicyPipeline(driver, learner, buffer, algorithm), learner, buffer
    learner = Learner(algorithm, specs, converters)
    if config.train.replay_on_policy:  # room for exactly one unroll of T + 1 rows per copy
        cfg = config.train
        buffer = ReplayBuffer(specs.experience, cfg.num_envs, cfg.num_envs * (cfg.unroll_length + 1),
                              sequence_length=1)
        return ReplayAllPipeline(driver, learner, buffer), learner, buffer
    return OnPolicyPipeline(driver, learner), learner, None


def make_async_pipeline(config: RunConfig, envs: list, chain: TransformerChain, algorithm: Algorithm,
                        specs: RunSpecs, converters: Converters) -> tuple:
    """The asynchronous pipeline with its learner and, for off-policy algorithms, its replay buffer."""
    buffer = make_replay_buffer(config, algorithm, specs) if algorithm.off_policy else None
    learner = Learner(algorithm, specs, converters, buffer)
    pipeline = AsyncPipeline(envs, chain, algorithm, specs, converters, learner, buffer, config.train,
                             config.section("async", AsyncConfig))
    return pipeline, learner, buffer


def make_replay_buffer(config: RunConfig, algorithm: Algorithm, specs: RunSpecs) -> Any:
    """The replay buffer an off-policy algorithm asks for, after checking it can be sampled."""
    from rlengine.replay import ReplayBuffer

    cfg, name = config.train, config.train.algorithm
    needed = cfg.num_envs * algorithm.mini_batch_length
    if algorithm.initial_collect_steps < needed:
        raise ConfigError(
            f"{name}.initial_collect_steps = {algorithm.initial_collect_steps} is too small to sample "
            f"sequences of {algorithm.mini_batch_length} steps from {cfg.num_envs} environment copies; "
            f"set it to at least {needed}")
    needed_capacity = cfg.num_envs * max(algorithm.mini_batch_length, cfg.unroll_length)
    if algorithm.replay_capacity < needed_capacity:
        raise ConfigError(f"{name}.replay_capacity = {algorithm.replay_capacity} must be at least "
                          f"{needed_capacity} (num_envs x max(mini_batch_length, unroll_length))")
    return ReplayBuffer(specs.experience, cfg.num_envs, algorithm.replay_capacity,
                        sequence_length=algorithm.mini_batch_length, prioritized=algorithm.prioritized_replay,
                        priority_alpha=algorithm.priority_alpha)


def _transformers(config: RunConfig, classes: list, observation_spec: Any) -> list:
    out, spec = [], observation_spec
    for name, cls in classes:
        transformer = cls(spec, config.section(name, cls.config_class))
        out.append(transformer)
        spec = transformer.output_spec
    return out


def config_classes(plugins: Plugins) -> dict[str, type]:
    """Section name -> config class, for every registered plugin class that has one."""
    out: dict[str, type] = {}
    for kind in ("algorithm", "environment", "transformer", "writer"):
        for entry in plugins.registries[kind]:
            out.setdefault(entry.name, getattr(entry.obj, "config_class", None) or type(None))
    return out

