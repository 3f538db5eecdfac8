"""The programmatic API: build a run from a config and train or evaluate it.

Example (a notebook needs nothing else)::

    import rlengine
    engine = rlengine.Engine({"train": {"algorithm": "ppo", "env": "CartPole-v1"}})
    result = engine.train()
    print(result.eval_return, result.root_dir)
"""

from __future__ import annotations

import contextlib
import random
import time
from typing import Any, Iterable, Iterator, Mapping, Optional

import attrs
import numpy as np
import tensorflow as tf

from rlengine.api import seeding
from rlengine.api.run import Run
from rlengine.config import RunConfig, apply_overrides, build_config, default_root_dir
from rlengine.config.presets import Preset, naming_preset, starting_config
from rlengine.errors import RLEngineError
from rlengine.learn.replicas import worker_train_config
from rlengine.plugin.manager import Plugins, build_plugins
from rlengine.run.build import Components, build_components, check_names, config_classes, environment_class
from rlengine.run.callbacks import RunCallbacks
from rlengine.run.checkpoints.choice import LATEST, CheckpointChoiceError, Choice, chosen_checkpoint, parse_choice
from rlengine.run.checkpoints.initial import checked_init_source
from rlengine.run.checkpoints.replay_rows import held_rows
from rlengine.run.checkpoints.restoring import checked_choice, restore_choice
from rlengine.run.checkpoints.rundir import RunDirectory, claimed
from rlengine.run.checkpoints.saved_specs import write_specs
from rlengine.run.checkpoints.store import check_resumable, newest_checkpoint
from rlengine.run.process.crashes import crashes_named, environment_files
from rlengine.run.process.custom_gradients import custom_gradients_released
from rlengine.run.process.signals import stop_on_signals
from rlengine.run.process.startup import StartupClock
from rlengine.run.trainer import Trainer, TrainResult


class Engine:
    """One configured run.

    ``config`` is a raw dict of TOML sections (``{"train": {...}, "ppo":
    {...}}``), a path to a TOML file, or ``None``: then the embedded demo
    (PPO tuned for CartPole-v1) unless the overrides choose another
    ``train.algorithm`` or ``train.env``: then the settings start from the
    preset a plugin registered for that pair (:attr:`preset`; none with
    ``use_preset=False``), else from every key's default. ``overrides`` are
    ``section.key=value`` strings, applied on top. :attr:`config` has a
    section, defaults filled in, for every plugin the run uses, and that is
    what ``config.toml`` lists.

    Training into a root dir that holds checkpoints resumes from the newest
    complete one (docs/resume.md); a root dir whose ``config.toml`` differs
    from this config is refused unless ``force=True``, and so is one another
    process is training into, or one holding files rlengine did not write
    (:mod:`rlengine.run.checkpoints.rundir`).
    """

    def __init__(self, config: Optional[Mapping[str, Any] | str] = None, overrides: Iterable[str] = (),
                 *, disabled_plugins: Iterable[str] = (), extra_plugins: Iterable[tuple[str, Any]] = (),
                 plugins: Optional[Plugins] = None, force: bool = False, use_preset: bool = True):
        self.startup = StartupClock()  # the imports end here; the start-up ends with the first iteration
        overrides = list(overrides)
        self.force = force  # resume a root dir even if its config.toml differs (``rlengine train --force``)
        self.plugins = plugins or build_plugins(disabled=disabled_plugins, extra_plugins=extra_plugins)
        self.plugins.report_failures()  # a broken plugin stops only a run that uses it
        registries = self.plugins.registries
        raw, preset = starting_config(config, overrides, registries.presets if use_preset else None,
                                      registries.graph_environments)
        #: the preset the settings start from; None: a config was given, the demo, or no preset for the pair
        self.preset: Optional[Preset] = preset
        with naming_preset(self.preset):
            config_obj = build_config(apply_overrides(raw, overrides), config_classes(self.plugins))
            configured = self.plugins.call_chained("rlengine_configure", "config", config_obj, expect=RunConfig)
            check_names(configured, self.plugins)
        self.config: RunConfig = configured.with_default_sections(used_sections(configured, self.plugins))
        # a worker of a multi-worker learner writes and seeds its own run (the chief's: the config's)
        self.config = attrs.evolve(self.config, train=worker_train_config(self.config.train))

    @classmethod
    def from_toml(cls, path: str, overrides: Iterable[str] = (), **kwargs: Any) -> "Engine":
        return cls(path, overrides, **kwargs)

    def config_comments(self) -> list[str]:
        """The header of the run's ``config.toml``: what it lists, and the preset its settings came from."""
        lines = ["The settings of this run: every section it uses, every key with its effective value (defaults",
                 "filled in). An unset key (no value; TOML has no null) is a '# key: unset' comment."]
        if self.preset is not None:
            lines.append(f"Settings from {self.preset.origin()}, overrides on top.")
        return lines

    def train(self) -> TrainResult:
        """Train until the step budget or the target return; returns the result.

        SIGINT or SIGTERM (main thread only) ends it after the current
        iteration with a checkpoint and :class:`TrainingInterrupted`; a second
        SIGINT aborts at once. The previous handlers are restored afterwards.
        """
        # TensorFlow keeps every custom gradient a run's graphs registered, and with them those
        # graphs: released here, or each run trained in this process stays in its memory
        with stop_on_signals(), custom_gradients_released(), environment_crashes_named(self.config, self.plugins):
            return self._train()

    def _train(self) -> TrainResult:
        start = time.perf_counter()
        self.startup.phase("config")
        cfg = self.config.train
        root_dir = cfg.root_dir or default_root_dir(cfg.algorithm, cfg.env, cfg.dataset)
        with claimed(root_dir) as run_dir:  # one writer; a start refused inside leaves the dir as it was
            with naming_preset(self.preset):
                check_resumable(root_dir, self.config.to_dict(), self.force, default_values(self.config))
            checked_init_source(cfg, root_dir)  # a wrong train.init_from is refused before anything is built
            return self._train_claimed(run_dir, start)

    def _train_claimed(self, run_dir: RunDirectory, start: float) -> TrainResult:
        """Build and train into a claimed root dir; its files are written once the checkpoint is restored."""
        cfg, root_dir = self.config.train, run_dir.root_dir
        seed_everything(cfg.seed)
        if cfg.deterministic:  # process-wide and cannot be undone; resume is exact with it (docs/resume.md)
            tf.config.experimental.enable_op_determinism()
        tf.config.run_functions_eagerly(cfg.eager)
        callbacks = RunCallbacks(self.config, self.plugins)  # made before the build, registered for this run only
        components = build_components(self.config, self.plugins, root_dir)
        self.startup.phase("build")
        run = Run(self.config, root_dir, components.algorithm, components.specs, components.pipeline,
                  internals=components)
        hook = self.plugins.hook
        error: Optional[BaseException] = None

        def started() -> None:  # the build and the checkpoint fit: now the run is known to start
            run_dir.mark_started(self.config.to_toml(self.config_comments()))
            # what rlengine.load needs to rebuild the policy without an environment
            write_specs(root_dir, components.specs.raw_time_step, components.specs.action)

        try:
            callbacks.register()
            hook.rlengine_train_start(run=run)
            return Trainer(run, components, self.plugins, start, on_started=started, startup=self.startup).train()
        except BaseException as exc:
            error = exc
            raise
        finally:
            try:
                hook.rlengine_train_end(run=run, error=error)
            finally:
                callbacks.unregister()
                components.close()
                tf.config.run_functions_eagerly(False)

    def evaluate(self, num_episodes: Optional[int] = None, checkpoint: Choice = LATEST) -> dict:
        """Evaluate the greedy policy of a checkpoint in ``train.root_dir`` (``checkpoint``: as for :meth:`restored`).

        Returns ``eval/average_return``, ``eval/std_return``,
        ``eval/average_length`` and ``eval/episodes``. Without a checkpoint
        (nothing trained yet) it is an error rather than a score of a random
        policy.
        """
        cfg = self.config.train
        if num_episodes is not None:
            self.config = attrs.evolve(self.config, train=attrs.evolve(cfg, num_eval_episodes=num_episodes))
        with self.restored(checkpoint) as components:
            return components.evaluate()

    @contextlib.contextmanager
    def restored(self, checkpoint: Choice = LATEST) -> Iterator[Components]:
        """The run's components (no writers) with a checkpoint of ``train.root_dir`` restored.

        ``checkpoint`` is ``"latest"`` (the newest one; damaged ones are
        skipped with a warning line), ``"best"`` (the one of the best
        evaluation return, ``checkpoints/best/``) or the iteration number of a
        kept one. A best or numbered checkpoint that is missing or damaged is a
        one-line error naming it: another one would be another policy. Inside
        the ``with`` block :meth:`newest_checkpoint` names the one restored.
        Shared by :meth:`evaluate` and ``rlengine play`` / ``export``; the
        environments are closed on exit.
        """
        cfg = self.config.train
        if not cfg.root_dir:
            raise RLEngineError("no run directory to restore from: set train.root_dir to one that "
                                "'rlengine train' wrote")
        chosen = checked_choice(cfg.root_dir, checkpoint)  # before building anything
        seed_everything(cfg.seed)
        components = build_components(self.config, self.plugins, cfg.root_dir, writers=False, evaluation=True,
                                      training=False)
        try:
            saved = tf.train.Checkpoint(algorithm=components.algorithm, transformers=components.chain)
            self._restored_checkpoint: Optional[str] = restore_choice(
                cfg.root_dir, chosen, lambda prefix: saved.restore(prefix).expect_partial())
            yield components
        finally:
            self._restored_checkpoint = None
            components.close()

    # -- for commands on run directories -------------------------------------------------
    # ``rlengine-tools`` (eval, play, export, plot) may use only the public API, and these
    # answers otherwise live in private modules (rlengine.run.build, rlengine.run.checkpoints.store).

    def environment_section(self) -> tuple[str, type]:
        """``(section name, class)`` of the registered environment ``train.env`` resolves to.

        The name is ``train.env`` when an environment (or graph environment) is
        registered under it, else ``name`` for an id ``name/task`` when an
        environment is registered as ``name`` (``envpool/Pong-v5``), else
        ``train.env_provider`` (e.g. ``"gym"`` for a Gymnasium id); it is also
        the environment's config section.
        """
        return environment_class(self.config, self.plugins)

    def replay_rows(self) -> Iterator[Any]:
        """Each environment copy's replay rows (a numpy nest, oldest row first) from the run's newest checkpoint.

        For exporting a finished off-policy run's experience (``rlengine collect --from-replay``); one-line
        errors when the run keeps no replay or its checkpoints leave it out.
        """
        with self.restored(LATEST) as components:
            yield from held_rows(self.config.train.root_dir, components, self._restored_checkpoint or "")

    def newest_checkpoint(self, checkpoint: Choice = LATEST) -> Optional[str]:
        """Path prefix of the checkpoint in ``train.root_dir`` that :meth:`restored` restores for ``checkpoint``
        (``"latest"``: the newest whose files match their marker; inside the ``with`` block: the one it did
        restore), or None when there is none or no root dir is set.

        A best checkpoint's prefix is ``<root_dir>/checkpoints/best/ckpt-<iteration>``. Every checkpoint's
        marker ``<prefix>.complete`` (JSON) records ``iteration`` and ``env_steps``; a best one's also
        ``eval_return``, the evaluation return that made it best.
        """
        restored = getattr(self, "_restored_checkpoint", None)
        if restored is not None:
            return restored
        root_dir = self.config.train.root_dir
        choice = parse_choice(checkpoint)  # not a choice: one line, even without a root dir
        if not root_dir:
            return None
        if choice == LATEST:
            return newest_checkpoint(root_dir)
        try:
            return chosen_checkpoint(root_dir, choice)
        except CheckpointChoiceError:  # none of that choice, or damaged
            return None


def used_sections(config: RunConfig, plugins: Plugins) -> dict[str, type]:
    """Section -> config class of every plugin ``[train]`` names: the algorithm (and the encoder its ``encoder``
    key names), environment, pipeline, transformers and writers.

    Not the callbacks: ``[train]`` does not name them, so their sections are
    listed only when the config sets them. A run directory's ``config.toml``
    thus stays readable (``rlengine eval``, ``rlengine.load``) where a plugin
    of callbacks only is not installed.
    """
    cfg, reg = config.train, plugins.registries
    algorithm = reg.algorithms.get(cfg.algorithm).obj
    env_name, env_class = environment_class(config, plugins)
    used = [(cfg.algorithm, algorithm), (env_name, env_class), (cfg.pipeline, reg.pipelines.get(cfg.pipeline).obj)]
    encoder = getattr(config.section(cfg.algorithm, algorithm.config_class), "encoder", None)
    if isinstance(encoder, str) and encoder in reg.networks:
        used.append((encoder, reg.networks.get(encoder).obj))
    used += [(name, reg.transformers.get(name).obj) for name in cfg.transformers]
    used += [(name, reg.writers.get(name).obj) for name in cfg.writers]
    return {name: cls.config_class for name, cls in used if getattr(cls, "config_class", None) is not None}


def environment_crashes_named(config: RunConfig, plugins: Plugins) -> contextlib.AbstractContextManager:
    """A segfault in the code of the run's Python environment names it and its plugin before Python's dump
    (:mod:`rlengine.run.process.crashes`); a graph environment runs no code of its own."""
    name, cls = environment_class(config, plugins)
    reg = plugins.registries
    if name in reg.graph_environments:
        return contextlib.nullcontext()
    return crashes_named(config.train.env, reg.environments.get(name).plugin, environment_files(cls))


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    tf.random.set_seed(seed)
    seeding.reset(seed)


def default_values(config: RunConfig) -> dict:
    """``section.key`` -> the default of every key of ``config``'s sections (for comparing run dirs)."""
    sections = {"train": type(config.train), **{name: type(cfg) for name, cfg in config.sections.items()}}
    return {f"{name}.{key}": value for name, cls in sections.items() for key, value in _defaults_of(cls).items()}


def _defaults_of(cls: type) -> dict:
    return {k: v for k, v in attrs.asdict(cls(), recurse=False).items() if v is not None}
