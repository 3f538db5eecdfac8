"""The TensorFlow half of :func:`rlengine.load`: the run's config and plugins as an engine, its transformer
chain and algorithm built from the saved specs, the checkpoint restored into them, and their steps
traced (:class:`~rlengine.policy.traced.TracedSteps`), cached once converted.
"""

from __future__ import annotations

import gc
import json
import os
from typing import Any, Callable, Iterable, Optional

import tensorflow as tf

from rlengine.api.data import Nest, StepType, TimeStep, zeros_from_spec
from rlengine.collect.policy_step import greedy
from rlengine.errors import CheckpointMismatchError, ConfigError
from rlengine.policy.cache import cache_path, write_cache
from rlengine.policy.traced import TracedSteps, drawing_from
from rlengine.run.build import build_acting, make_environment
from rlengine.run.checkpoints.restoring import restore_choice
from rlengine.run.checkpoints.saved_specs import UnsupportedSpec, encode, read_specs
from rlengine.run.engine import Engine


def traced_steps(run_dir: str, config_path: str, chosen: Optional[str], seed: Any,
                 key_of: Callable[[str], Optional[str]], extra_plugins: Iterable,
                 disabled_plugins: Iterable) -> tuple[TracedSteps, int]:
    """``(steps, seed)``: the run's steps with ``chosen`` restored (None: the newest that loads, past damaged
    ones), and ``seed`` or the run's ``train.seed`` when None. With a cache key (``key_of(prefix)``, for the
    checkpoint restored), the steps cache themselves once converted."""
    engine = _engine(run_dir, config_path, extra_plugins, disabled_plugins)
    specs = read_specs(run_dir) or specs_from_environment(engine)
    run_seed = engine.config.train.seed
    seed = run_seed if seed is None else seed
    chain, algorithm, prefix = restored_parts(engine, specs, chosen, seed)
    key = key_of(prefix)
    on_converted = None if key is None else _cacher(prefix, key, run_seed)
    return TracedSteps(chain, algorithm, specs[0], prefix, seed, on_converted), seed


def _cacher(prefix: str, key: str, run_seed: int) -> Any:
    def cache(steps: TracedSteps) -> None:
        try:
            nests = {"observation": encode(steps.observation_spec), "action": encode(steps.action_spec),
                     "state": [encode(s) for s in steps.state_specs]}
        except UnsupportedSpec:
            return  # loads build the run, as for a run without specs.json
        write_cache(cache_path(prefix), key, run_seed, nests, steps)

    return cache


def _engine(run_dir: str, config_path: str, extra_plugins: Iterable, disabled_plugins: Iterable) -> Engine:
    """The run's config and plugins, as an :class:`Engine` (nothing is built or trained)."""
    root = f"train.root_dir={json.dumps(os.path.abspath(run_dir))}"
    # No pipeline is built, so none may size TensorFlow's thread pool (the async one's cannot grow once
    # TensorFlow ran an op, e.g. for another loaded policy): the sync pipeline asks for nothing.
    overrides = [root, "train.pipeline=sync"]
    try:
        return Engine(config_path, overrides, extra_plugins=extra_plugins, disabled_plugins=disabled_plugins)
    except ConfigError as err:  # e.g. a run of an algorithm whose plugin is not installed here
        raise ConfigError(f"{config_path}: {err}") from None


def specs_from_environment(engine: Engine) -> tuple[TimeStep, Nest]:
    """A run directory without ``specs.json`` (trained before it was written): ask one environment copy."""
    env = make_environment(engine.config, engine.plugins, 1, engine.config.train.seed)
    try:
        return env.time_step_spec(), env.action_spec()
    finally:
        env.close()


def restored_parts(engine: Engine, specs: tuple, chosen: Optional[str], seed: int) -> tuple[Any, Any, str]:
    """``(chain, algorithm, prefix)``: the run's transformer chain and algorithm with ``chosen`` restored into
    them (None: the newest checkpoint that loads), by the commands' own way (:func:`restore_choice`)."""
    chain, algorithm = build_acting(engine.config, engine.plugins, *specs)
    create_variables(chain, algorithm, specs[0], seed)
    try:
        prefix = restore_choice(engine.config.train.root_dir, chosen, lambda path: restore(path, chain, algorithm))
    except CheckpointMismatchError as err:
        # The half-done restore warns, once per checkpoint value, when it is collected: collect it now, quietly.
        del chain, algorithm
        _collect_quietly()
        raise CheckpointMismatchError(f"checkpoint {err.checkpoint} does not fit the run's config.toml "
                                      f"({err.difference}): was config.toml edited after training? Restore it, "
                                      "or load another run", err.checkpoint, err.difference) from None
    return chain, algorithm, prefix


def create_variables(chain: Any, algorithm: Any, raw_spec: TimeStep, seed: int) -> None:
    """One step on zeros, greedy and sampling: layers create their variables on their first call."""
    raw = zeros_from_spec(raw_spec, [1])._replace(step_type=tf.fill([1], StepType.FIRST))
    with drawing_from(tf.random.Generator.from_seed(seed)):
        time_step, _ = chain.transform(raw, chain.initial_state(1))
        algorithm.rollout(time_step, algorithm.initial_state(1))  # variables that only exploration reads
        greedy(chain, algorithm, raw, chain.initial_state(1), algorithm.initial_state(1), 1)


def restore(prefix: str, chain: Any, algorithm: Any) -> None:
    """Restore ``prefix`` into ``chain`` and ``algorithm``; raises when it cannot (see :func:`restore_choice`)."""
    status = tf.train.Checkpoint(algorithm=algorithm, transformers=chain).read(prefix)
    status.expect_partial()  # the optimizer's slots, the replay buffer, counters: not needed to act
    status.assert_existing_objects_matched()


def _collect_quietly() -> None:
    logger = tf.get_logger()
    level = logger.level
    logger.setLevel("ERROR")
    try:
        gc.collect()
    finally:
        logger.setLevel(level)
