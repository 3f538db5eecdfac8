"""``rlengine.load``: the policy of a trained run, built without an environment or any training machinery.

Loading reads ``config.toml`` and ``specs.json`` of the run directory
(:mod:`rlengine.run.checkpoints.saved_specs`), builds the run's transformer chain and
algorithm from them, restores the chosen checkpoint into both, and traces
one greedy step (:class:`rlengine.Policy`; docs/predict.md).
"""

from __future__ import annotations

import gc
import json
import os
from typing import Any, Iterable, Optional

import tensorflow as tf

from rlengine.api.data import Nest, StepType, TimeStep, zeros_from_spec
from rlengine.collect.policy_step import greedy
from rlengine.errors import ConfigError, NotARunDirectory, RLEngineError, telling_line
from rlengine.policy.saved import Policy, drawing_from
from rlengine.run.build import build_acting, make_environment
from rlengine.run.checkpoints.choice import LATEST, Choice, chosen_checkpoint, parse_choice
from rlengine.run.checkpoints.rundir import CONFIG_FILE
from rlengine.run.checkpoints.saved_specs import read_specs
from rlengine.run.engine import Engine

BACKENDS = ("auto", "tflite", "tensorflow")


def load(run_dir: str, checkpoint: Choice = LATEST, *, backend: str = "auto", seed: Optional[int] = None,
         extra_plugins: Iterable[tuple[str, Any]] = (), disabled_plugins: Iterable[str] = ()) -> Policy:
    """The policy of ``checkpoint`` (``"latest"``, ``"best"`` or an iteration number) of a run directory.

    No environment is built: the specs come from the run's ``specs.json``. A
    run directory written before rlengine saved that file has none; loading
    it builds one environment copy to ask for the specs, and closes it.
    ``backend``: ``"auto"`` converts the greedy step to TensorFlow Lite in a
    background thread (``predict`` runs TensorFlow until then, and for good
    if the conversion fails), ``"tflite"`` converts before returning (an
    error if it cannot), ``"tensorflow"`` never converts. ``seed`` seeds the
    sampling of ``predict(..., deterministic=False)`` (default: the run's
    ``train.seed``). Plugins are the installed ones, plus ``extra_plugins``
    (``(name, plugin)`` pairs), less ``disabled_plugins``. Every error is
    one line naming the fix.
    """
    if backend not in BACKENDS:
        raise ConfigError(f"backend {backend!r} is not one of {', '.join(BACKENDS)}")
    config_path = run_config_path(run_dir)
    parse_choice(checkpoint)  # not a choice at all: say so before anything is built
    prefix = chosen_checkpoint(run_dir, checkpoint)
    engine = _engine(run_dir, config_path, extra_plugins, disabled_plugins)
    specs = read_specs(run_dir) or specs_from_environment(engine)
    run_seed = engine.config.train.seed if seed is None else seed
    chain, algorithm = restored_parts(engine, specs, prefix, run_seed)
    policy = Policy(chain, algorithm, specs[0], prefix, run_seed)
    if backend == "tflite":
        policy.convert()
    elif backend == "auto":
        policy.convert_in_background()
    return policy


def run_config_path(run_dir: str) -> str:
    """``run_dir/config.toml``, or a one-line error saying why ``run_dir`` is not a run directory."""
    if not os.path.isdir(run_dir):
        what = "does not exist" if not os.path.exists(run_dir) else "is a file"
        raise NotARunDirectory(f"run directory {run_dir!r} {what}: pass the --root-dir of a 'rlengine train' run, "
                               "e.g. rlengine.load('runs/<run-name>')")
    path = os.path.join(run_dir, CONFIG_FILE)
    if not os.path.isfile(path):
        raise NotARunDirectory(f"{run_dir!r} is not an rlengine run directory (no {CONFIG_FILE}): pass the "
                               "directory that 'rlengine train' wrote, e.g. runs/<run-name>")
    return path


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


def restored_parts(engine: Engine, specs: tuple, prefix: str, seed: int) -> tuple[Any, Any]:
    """The run's transformer chain and algorithm, with ``prefix`` restored into them."""
    chain, algorithm = build_acting(engine.config, engine.plugins, *specs)
    create_variables(chain, algorithm, specs[0], seed)
    reason = restore(prefix, chain, algorithm)
    if not reason:
        return chain, algorithm
    # The half-done restore warns, once per checkpoint value, when it is collected: collect it now, quietly.
    del chain, algorithm
    _collect_quietly()
    if not os.path.exists(f"{prefix}.index"):
        raise RLEngineError(f"checkpoint {prefix} was removed while it loaded (a training run keeps only its "
                            "newest checkpoints): load again")
    raise RLEngineError(f"checkpoint {prefix} does not fit the run's config.toml ({reason}): was config.toml "
                        "edited after training? Restore it, or load another run")


def create_variables(chain: Any, algorithm: Any, raw_spec: TimeStep, seed: int) -> None:
    """One step on zeros, greedy and sampling: layers create their variables on their first call."""
    raw = zeros_from_spec(raw_spec, [1])._replace(step_type=tf.fill([1], StepType.FIRST))
    with drawing_from(tf.random.Generator.from_seed(seed)):
        time_step, _ = chain.transform(raw, chain.initial_state(1))
        algorithm.rollout(time_step, algorithm.initial_state(1))  # variables that only exploration reads
        greedy(chain, algorithm, raw, chain.initial_state(1), algorithm.initial_state(1), 1)


def restore(prefix: str, chain: Any, algorithm: Any) -> str:
    """Restore ``prefix`` into ``chain`` and ``algorithm``; "" or why it does not fit them."""
    try:
        status = tf.train.Checkpoint(algorithm=algorithm, transformers=chain).read(prefix)
        status.expect_partial()  # the optimizer's slots, the replay buffer, counters: not needed to act
        status.assert_existing_objects_matched()
    except (AssertionError, ValueError, tf.errors.OpError) as exc:
        return telling_line(str(exc))
    return ""


def _collect_quietly() -> None:
    logger = tf.get_logger()
    level = logger.level
    logger.setLevel("ERROR")
    try:
        gc.collect()
    finally:
        logger.setLevel(level)
