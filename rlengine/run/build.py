"""Builds a run's components from its config and the loaded plugins.

The pipeline is whatever ``train.pipeline`` names in the registry: build
asks its class which environments to make and how many inter-op threads it
needs, prepares the specs once, then hands the prepared parts to it.
"""

from __future__ import annotations

import os
import pickle
from typing import Any, Iterator, Mapping, Optional

import attrs
import tensorflow as tf

from rlengine.api import Algorithm, Environment, GraphEnvironment
from rlengine.api.network import Encoders, encoders_in_scope
from rlengine.api.pipeline import CollectorRecipe, Pipeline, PipelineContext
from rlengine.api.placement import HOST, checked_device, on_device
from rlengine.api.specs import RunSpecs, check_nest
from rlengine.collect.converters import Converters
from rlengine.collect.faults import GuardedEnvironment
from rlengine.collect.stepper import reset_seed
from rlengine.collect.transformers import TransformerChain
from rlengine.config import RunConfig
from rlengine.errors import ConfigError, PluginError
from rlengine.files import writing
from rlengine.learn.learner import Learner
from rlengine.learn.replay.buffer import ReplayBuffer, kept_in_replay
from rlengine.learn.replay.frames import replay_frame_stacks
from rlengine.learn.replicas import learner_replicas, learner_scope, worker_replicas
from rlengine.learn.reward_scale import RewardScale
from rlengine.plugin.manager import Plugins
from rlengine.plugin.registry import config_section_kinds
from rlengine.run.dataset_replay import check_dataset_replay
from rlengine.run.evaluator import Evaluator
from rlengine.run.process.memory import check_fits
from rlengine.run.process.runtime import prepare_runtime, start_runtime
from rlengine.run.specs import prepare_specs

EVAL_SEED_OFFSET = 1_000_003  # evaluation copies never share seeds with training copies
MAX_EVAL_COPIES = 32


@attrs.define
class Components:
    """Everything a run steps, trains and writes with."""

    eval_env: Optional[Environment]  # None when the run does not evaluate (train.eval_interval = 0)
    chain: TransformerChain
    algorithm: Algorithm
    converters: Converters
    specs: RunSpecs
    learner: Learner
    evaluator: Optional[Evaluator]
    writers: list
    pipeline: Pipeline
    replay: Any  # the replay buffer of off-policy algorithms, else None (the pipeline context's replay)

    @property
    def envs(self) -> list:
        """The training environments (the pipeline's)."""
        return self.pipeline.envs

    def write(self, metrics: dict) -> None:
        for writer in self.writers:
            # a full disk names the file, whichever library wrote it (a writer that skipped super().__init__
            # keeps no root_dir)
            with writing(getattr(writer, "root_dir", "") or "."):
                writer.write(metrics)

    def evaluate(self) -> dict:
        """One evaluation of the greedy policy (:meth:`Evaluator.run`); the parts were built with evaluation."""
        if self.evaluator is None:
            raise RuntimeError("these components were built without evaluation (train.eval_interval = 0)")
        return self.evaluator.run()

    def close(self) -> None:
        """Stop the pipeline, then close writers and environments; every one is tried even if one fails."""
        errors = []
        self.pipeline.stop()  # threads first: they may be stepping the envs
        for closable in [*self.writers, *self.pipeline.envs, self.evaluator, self.eval_env]:  # its watcher first
            if closable is None:
                continue
            try:
                closable.close()
            except Exception as exc:  # keep closing the rest
                errors.append(exc)
        if errors:
            raise errors[0]


def environment_class(config: RunConfig, plugins: Plugins) -> tuple[str, type[Any]]:
    """(section name, class) of the run's environment: a graph environment registered under ``train.env``,
    else an environment registered by that name, else the one registered as the ``name`` of a ``name/task``
    id (``envpool/Pong-v5``), else the provider."""
    env, graph_envs, envs = config.train.env, plugins.registries.graph_environments, plugins.registries.environments
    if env in graph_envs:
        return env, graph_envs.get(env).obj
    prefix, slash, _ = env.partition("/")
    name = env if env in envs else prefix if slash and prefix in envs else config.train.env_provider
    return name, envs.get(name).obj


def make_environment(config: RunConfig, plugins: Plugins, num_envs: int, seed: int,
                     first_env_id: int = 0, evaluation: bool = False,
                     run_dir: str = "") -> Environment | GraphEnvironment:
    """The plugin's environment inside a :class:`GuardedEnvironment` (restarts, timeout, finite check); a
    graph environment as it is.

    Evaluation environments are never restarted: the evaluator's episode
    accounting does not survive a restart mid-evaluation. A config class with a
    ``run_dir`` field gets the run's directory (``run_dir``, else ``train.root_dir``)
    as an absolute path, e.g. for an environment that reads the run's checkpoints.
    """
    name, cls = environment_class(config, plugins)
    cfg, section = config.train, config.section(name, cls.config_class)
    run_dir = run_dir or cfg.root_dir
    if run_dir and attrs.has(type(section)) and "run_dir" in attrs.fields_dict(type(section)):
        section = attrs.evolve(section, run_dir=os.path.abspath(run_dir))
    if issubclass(cls, GraphEnvironment):  # pure functions: nothing to restart, time out or check from Python
        return cls(env_id=cfg.env, num_envs=num_envs, seed=seed, first_env_id=first_env_id, config=section)
    if evaluation and attrs.has(type(section)) and "evaluation" in attrs.fields_dict(type(section)):
        section = attrs.evolve(section, evaluation=True)  # e.g. the raw game score, not clipped rewards

    def factory(env_seed: int) -> Environment:
        return cls(env_id=cfg.env, num_envs=num_envs, seed=env_seed, first_env_id=first_env_id, config=section)

    label = f"{'evaluation ' if evaluation else ''}environment {cfg.env!r}"
    return GuardedEnvironment(factory, label, seed, max_restarts=0 if evaluation else cfg.max_env_restarts,
                              step_timeout=cfg.env_step_timeout, check_finite=cfg.check_observations,
                              restarts_key=None if evaluation else "train.max_env_restarts")


def pipeline_class(config: RunConfig, plugins: Plugins) -> tuple[type[Pipeline], Any]:
    """The run's pipeline class and its config section."""
    cls = plugins.registries.pipelines.get(config.train.pipeline).obj
    return cls, config.section(config.train.pipeline, cls.config_class)


def checked_env_layout(config: RunConfig, cls: type[Pipeline], section: Any, algorithm_class: type) -> list:
    """The pipeline's ``env_layout``, held to its contract: ``(num_envs, first_env_id)`` pairs that number the
    run's copies ``0..train.num_envs-1`` once each (none: the pipeline steps its environments elsewhere)."""
    train = config.train
    layout = cls.env_layout(train, section, algorithm_class)
    pairs = list(layout) if isinstance(layout, (list, tuple)) else None
    fine = pairs is not None and all(isinstance(p, (list, tuple)) and len(p) == 2 and all(
        isinstance(v, int) and not isinstance(v, bool) for v in p) and p[0] > 0 and p[1] >= 0 for p in pairs)
    if fine and pairs:
        ids = sorted(i for num, first in pairs for i in range(first, first + num))
        fine = ids == list(range(train.num_envs))
    if not fine:
        raise PluginError(f"pipeline {train.pipeline!r} ({cls.__module__}.{cls.__qualname__}): env_layout() "
                          f"returned {layout!r}, which does not number the run's copies 0..{train.num_envs - 1} "
                          "once each; return (num_envs, first_env_id) pairs that do, e.g. "
                          f"[({train.num_envs}, 0)]")
    return pairs or []


def make_training_environments(config: RunConfig, plugins: Plugins, layout: list, run_dir: str = "") -> list:
    """One environment per ``(num_envs, first_env_id)`` of the pipeline's layout."""
    envs: list = []
    try:
        for batch, first in layout:
            envs.append(make_environment(config, plugins, batch, config.train.seed, first, run_dir=run_dir))
    except BaseException:
        for env in envs:
            env.close()
        raise
    return envs


def check_names(config: RunConfig, plugins: Plugins) -> None:
    """Fail early, with close matches, on any plugin name the config uses but nobody registered, and on
    pipeline settings that cannot run; then size TensorFlow's runtime for the run."""
    cfg, reg = config.train, plugins.registries
    algorithm_class = reg.algorithms.get(cfg.algorithm).obj
    environment_class(config, plugins)
    for name in cfg.transformers:
        reg.transformers.get(name)
    for name in cfg.writers:
        reg.writers.get(name)
    cls, section = pipeline_class(config, plugins)
    if cfg.dataset and not cls.reads_datasets:
        check_dataset_replay(cfg, algorithm_class, plugins)
    checked_env_layout(config, cls, section, algorithm_class)  # settings that cannot run: refused before any file
    prepare_runtime(cls.runtime_threads(cfg, section), cfg.pipeline)


def build_components(config: RunConfig, plugins: Plugins, root_dir: str, writers: bool = True,
                     evaluation: Optional[bool] = None, training: bool = True) -> Components:
    """The run's parts; evaluation copies and the evaluator only with ``evaluation`` (default: when the run
    evaluates, ``train.eval_interval`` > 0), since an env like Atari's takes seconds to make. Without
    ``training`` (eval, play, export) the learner has one device whatever ``train.learner_devices`` says:
    a run trained on several evaluates where they are absent."""
    cfg, reg = config.train, plugins.registries
    if evaluation is None:
        evaluation = cfg.eval_interval > 0
    cls, section = pipeline_class(config, plugins)
    prepare_runtime(cls.runtime_threads(cfg, section), cfg.pipeline)  # runs no op (done if an Engine built it)
    algorithm_cls = reg.algorithms.get(cfg.algorithm).obj
    writer_classes = [(n, reg.writers.get(n).obj) for n in cfg.writers] if writers else []
    envs = make_training_environments(config, plugins, checked_env_layout(config, cls, section, algorithm_cls),
                                      root_dir)
    env_name = environment_class(config, plugins)[0]
    eval_env = spec_env = None
    try:
        if evaluation:
            eval_copies = min(cfg.num_eval_episodes, MAX_EVAL_COPIES)
            eval_env = make_environment(config, plugins, eval_copies, cfg.seed + EVAL_SEED_OFFSET, evaluation=True,
                                        run_dir=root_dir)
        env = envs[0] if envs else (spec_env := make_environment(config, plugins, 1, cfg.seed, run_dir=root_dir))  # remote collection
        raw_spec = env.time_step_spec()
        workers = worker_replicas(cfg) if training else None  # TensorFlow joins workers before its first op
        start_runtime(cfg.intra_op_threads, raw_spec.observation)  # the first op: the pools are fixed from here
        device = checked_device("train.device", cfg.device)
        checked_device("train.actor_device", cfg.actor_device)
        replicas = workers or (learner_replicas(cfg) if training else None)
        with learner_scope(device, replicas):  # the algorithm's variables, optimizer slots and statistics
            chain, algorithm = build_acting(config, plugins, raw_spec, env.action_spec())
            converters = Converters(reg.distributions)
            check_nest(f"environment {env_name!r}", "reset() time step", raw_spec, first_time_step(env))
            names: dict = {"algorithm": cfg.algorithm, **dict(enumerate(cfg.transformers))}
            specs = prepare_specs(raw_spec, env.action_spec(), chain, algorithm, converters, names)
            algorithm.build()
            reward_scale = make_reward_scale(cfg, algorithm, specs)
        with on_device(HOST):  # large, and sampling moves only a minibatch to the learner
            replay = None  # a pipeline that reads a dataset samples from it, not from collected rows
            if algorithm.off_policy and not cls.reads_datasets:
                replay = make_replay_buffer(config, algorithm, specs, stacked_frames(env))
        learner = Learner(algorithm, specs, converters, replay, reward_scale, device, cfg.jit_compile, replicas)
        context = PipelineContext(config, specs, algorithm, chain, converters, learner, replay, envs,
                                  lambda num_envs, first: make_environment(config, plugins, num_envs, cfg.seed, first,
                                                                           run_dir=root_dir),
                                  _collector_recipes(config, plugins))
        pipeline = cls.create(context, section)
        evaluator = Evaluator(eval_env, chain, algorithm, cfg.num_eval_episodes) if eval_env is not None else None
        writer_objects = [wcls(root_dir, config.section(n, wcls.config_class), total_env_steps=cfg.num_env_steps)
                          for n, wcls in writer_classes]
    except BaseException:
        for e in [*envs, eval_env]:
            if e is not None:
                e.close()
        raise
    finally:
        if spec_env is not None:
            spec_env.close()
    return Components(eval_env, chain, algorithm, converters, specs, learner, evaluator, writer_objects,
                      pipeline, replay)


def first_time_step(env: Environment | GraphEnvironment) -> Any:
    """The time step ``env`` starts with (a graph environment's reset also returns its state)."""
    if isinstance(env, GraphEnvironment):
        return env.reset(reset_seed(env, 0))[1]
    return env.reset()


def stacked_frames(env: Environment | GraphEnvironment) -> Any:
    """Which observation leaves are frame stacks (graph environments declare none)."""
    return None if isinstance(env, GraphEnvironment) else env.stacked_frames()


def make_reward_scale(cfg: Any, algorithm: Algorithm, specs: RunSpecs) -> Optional[RewardScale]:
    """The learner's reward scale when ``train.normalize_reward`` is on (one scalar float reward per step)."""
    if not cfg.normalize_reward:
        return None
    reward = specs.raw_time_step.reward
    if not isinstance(reward, tf.TensorSpec) or reward.shape.rank != 0 or not reward.dtype.is_floating:
        raise ConfigError(f"train.normalize_reward needs one float reward per step; environment {cfg.env!r} "
                          f"gives {reward}: set train.normalize_reward = false")
    return RewardScale(cfg.num_envs, getattr(algorithm.config, "gamma", 0.99), cfg.reward_clip)


def build_acting(config: RunConfig, plugins: Plugins, raw_time_step_spec: Any,
                 action_spec: Any) -> tuple[TransformerChain, Algorithm]:
    """The run's transformer chain and algorithm for the environment specs given (no environment needed:
    :func:`rlengine.load` reads the specs from the run directory)."""
    cfg, reg = config.train, plugins.registries
    algorithm_cls = reg.algorithms.get(cfg.algorithm).obj
    transformer_classes = [(n, reg.transformers.get(n).obj) for n in cfg.transformers]
    observation_spec = raw_time_step_spec.observation
    chain = TransformerChain(_transformers(config, transformer_classes, observation_spec))
    time_step_spec = raw_time_step_spec._replace(
        observation=TransformerChain.output_spec_of(chain.transformers, observation_spec))
    with encoders_in_scope(run_encoders(config, plugins)):
        algorithm = algorithm_cls(time_step_spec, action_spec,
                                  config.section(cfg.algorithm, algorithm_cls.config_class))
    return chain, algorithm


def run_encoders(config: RunConfig, plugins: Plugins) -> Encoders:
    """The run's encoders: registered network classes with their config sections."""

    def lookup(name: str) -> tuple:
        entry = plugins.registries.networks.get(name)
        cls = entry.obj
        return cls, config.section(name, cls.config_class), f"plugin {entry.plugin!r}{plugins.origin(entry.plugin)}"

    return Encoders(lookup)


def _collector_recipes(config: RunConfig, plugins: Plugins) -> Any:
    """``recipe(num_envs, first_env_id, seed_offset=0)`` for remote collectors of this run."""
    pickled = pickle.dumps(config)

    def recipe(num_envs: int, first_env_id: int, seed_offset: int = 0) -> CollectorRecipe:
        return CollectorRecipe(pickled, plugins.recipe, num_envs, first_env_id, seed_offset)

    return recipe


def make_replay_buffer(config: RunConfig, algorithm: Algorithm, specs: RunSpecs, stacked_frames: Any = None) -> Any:
    """The replay buffer an off-policy algorithm asks for, after checking it can be sampled.

    ``stacked_frames``: the training environment's :meth:`~rlengine.Environment.stacked_frames` (None when
    it declares none, or when no environment is at hand): those leaves are stored one frame per row.
    """

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
    frame_stacks = replay_frame_stacks(stacked_frames, specs, cfg.env)
    # Sized before allocating: too big a buffer is an out-of-memory traceback, or the kernel's kill.
    spec = kept_in_replay(specs.experience, algorithm)
    buffer_bytes = ReplayBuffer.bytes_needed(spec, cfg.num_envs, algorithm.replay_capacity,
                                             algorithm.prioritized_replay, frame_stacks)
    check_fits(buffer_bytes, "the replay buffer", f"{name}.replay_capacity", algorithm.replay_capacity, needed_capacity)
    return ReplayBuffer(spec, cfg.num_envs, algorithm.replay_capacity,
                        sequence_length=algorithm.mini_batch_length, prioritized=algorithm.prioritized_replay,
                        priority_alpha=algorithm.priority_alpha, frame_stacks=frame_stacks)


def _transformers(config: RunConfig, classes: list, observation_spec: Any) -> list:
    out, spec = [], observation_spec
    for name, cls in classes:
        transformer = cls(spec, config.section(name, cls.config_class))
        out.append(transformer)
        spec = transformer.output_spec
    return out


def config_classes(plugins: Plugins) -> Mapping[str, type]:
    """Section name -> config class, for every registered plugin class that has one.

    The names are known at once; a class is imported when its section is looked up, so a run imports
    only the plugins whose sections it uses, and a registration that cannot be imported stops only
    a run that names it (:class:`ConfigClasses`).
    """
    return ConfigClasses(plugins)


class ConfigClasses(Mapping):
    """The sections of every kind that has them, each class loaded on first lookup."""

    def __init__(self, plugins: Plugins):
        self._entries: dict = {}
        for kind in config_section_kinds():
            for entry in plugins.registries[kind]:
                self._entries.setdefault(entry.name, entry)

    def __getitem__(self, name: str) -> type:
        return getattr(self._entries[name].obj, "config_class", None) or type(None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)
