"""The interface of a pipeline plugin: how a run moves data from environments to the learner.

A pipeline owns collection (its environments, threads or remote workers) and
decides when the learner trains. The core builds it once per run and drives
it from the trainer, which never asks what kind of pipeline it drives::

    layout = cls.env_layout(config.train, section, algorithm_cls)  # before anything is written
    pipeline = cls.create(context, section)     # context: the run's prepared parts
    if resuming:                                # after the checkpoint's weights are restored
        continued = pipeline.resume(state)      # state: what save_state() returned then
    else:
        pipeline.start()
    while budget left:
        iteration = pipeline.iterate(env_steps)  # -> Iteration: unroll, losses, metrics
        state = pipeline.save_state()            # at each checkpoint (b"": episodes restart on resume)
    pipeline.stop()                              # always; then the core closes pipeline.envs

``section`` is the pipeline's own config (its ``config_class``, TOML section
named after what it registered). Register one with::

    @rlengine.hookimpl
    def rlengine_register_pipelines(register):
        register("mine", MyPipeline)             # train.pipeline = "mine"
"""

from __future__ import annotations

from typing import Any, Callable, ClassVar, NamedTuple, Optional

import attrs

from rlengine.api.noconfig import NoConfig


class Iteration(NamedTuple):
    """What one training iteration collected and trained."""

    experience: Any  # the unroll's rows [T + 1, B]; row 0 repeats the previous unroll's last row
    losses: dict  # averaged loss scalars (empty while nothing is trained)
    collect_seconds: float
    update_seconds: float
    env_steps: int = 0  # env steps this iteration collected (0: unroll_length x num_envs)
    metrics: Optional[dict] = None  # pipeline-specific summaries (e.g. async/policy_lag); never mutated
    dropped: bool = False  # the env restarted during the unroll: it was neither stored nor trained


@attrs.frozen
class CollectorRecipe:
    """What a remote collector is built from: values only, so it pickles."""

    config: bytes  # the run's RunConfig, pickled (its plugin sections import TF, which must start quietly first)
    plugins: Any  # PluginRecipe of the run
    num_envs: int
    first_env_id: int
    seed_offset: int = 0  # added to train.seed (a restarted runner should not replay its first episodes)


@attrs.frozen
class PipelineContext:
    """The run's parts a pipeline is built from; the core builds them once, from the specs' dry run."""

    config: Any  # the whole RunConfig (remote workers rebuild environments from it)
    specs: Any  # RunSpecs: every tensor spec of the run
    algorithm: Any  # the Algorithm, built; its variables are what the learner trains
    chain: Any  # TransformerChain of the observation transformers (state travels with each env copy)
    converters: Any  # Converters: distributions <-> tensors for rollout info
    learner: Any  # Learner: train(unroll) on-policy, train_from_replay(n) off-policy
    replay: Any  # ReplayBuffer of an off-policy algorithm, else None
    envs: list  # the training environments env_layout() asked for, built and guarded
    #: ``make_environment(num_envs, first_env_id)``: one more guarded training environment
    make_environment: Callable[[int, int], Any]
    #: ``collector_recipe(num_envs, first_env_id, seed_offset=0)``: a picklable
    #: :class:`rlengine.CollectorRecipe` from which another process builds a
    #: :class:`rlengine.RemoteCollector` (the run's env, transformers and policy, through the same plugins)
    collector_recipe: Optional[Callable[..., Any]] = None


class Pipeline:
    """Base class of pipelines (see the module docstring for the calling loop).

    ``__init__`` keeps ``self.context`` (the :class:`PipelineContext`: the
    run's config, specs, algorithm, learner, environments, ...) and
    ``self.config`` (the instance of ``config_class`` from its section).
    """

    config_class: ClassVar[type] = NoConfig
    #: Whether it learns from ``train.dataset``; a run that names a dataset is refused with any other pipeline.
    reads_datasets: ClassVar[bool] = False

    @classmethod
    def env_layout(cls, train: Any, config: Any, algorithm_class: Any) -> list[tuple[int, int]]:
        """``(num_envs, first_env_id)`` of each training environment the core builds for this pipeline.

        Called before anything is written: raise :class:`rlengine.ConfigError`
        for settings that cannot run. Env ids must number the run's copies
        ``0..train.num_envs-1`` once each. The default: one batched
        environment of every copy.
        """
        return [(train.num_envs, 0)]

    @classmethod
    def runtime_threads(cls, train: Any, config: Any) -> int:
        """Threads this pipeline needs in TensorFlow's inter-op pool (0: the default pool will do)."""
        return 0

    @classmethod
    def create(cls, context: PipelineContext, config: Any) -> "Pipeline":
        """Build the pipeline for one run; a class may return a subclass fit for the algorithm."""
        return cls(context, config)

    def __init__(self, context: PipelineContext, config: Any):
        self.context = context
        self.config = config

    @property
    def envs(self) -> list:
        """The environments to close when the run ends (after :meth:`stop`)."""
        return list(self.context.envs)

    def row_group_sources(self) -> list:
        """Where the episode statistics learn each row's group and whether episodes have outcomes (read
        once the pipeline has started): objects with the environment attributes ``num_envs``, ``env_id``,
        ``copy_ids`` and the optional ``row_groups`` and ``episode_outcomes``
        (:class:`~rlengine.api.environment.Environment`). The default: :attr:`envs`. A pipeline whose
        environments live elsewhere (remote workers) returns what they report (API 1.12)."""
        return self.envs

    def start(self) -> None:
        """Start collecting from fresh episodes."""
        raise NotImplementedError

    def iterate(self, env_steps: int) -> Iteration:
        """One training iteration; ``env_steps`` is the run's count before it."""
        raise NotImplementedError

    def save_state(self) -> bytes:
        """What lets collection continue exactly where it is (no pickle); b"": episodes restart on resume."""
        return b""

    def resume(self, state: bytes) -> bool:
        """Continue after a checkpoint was restored, from ``state`` (what :meth:`save_state` returned).

        Returns True when the episodes in progress continue; False when new
        ones start (the default: stored replay rows are cut, so no sampled
        transition joins an old episode to a new one, then :meth:`start`).
        """
        if self.context.replay is not None:
            self.context.replay.mark_newest_rows_last()
        self.start()
        return False

    def evaluation_metrics(self, metrics: dict) -> dict:
        """Metrics to add to an evaluation's ``metrics`` (``eval/average_return``, ...), e.g. a dataset's
        normalised score; default none."""
        return {}

    def stop(self) -> None:
        """Stop collecting (threads joined, workers ended); called once, however the run ends."""
