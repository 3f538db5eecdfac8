"""``rlengine.load``: the policy of a trained run, built without an environment or any training machinery.

Loading reads ``config.toml`` and ``specs.json`` of the run directory
(:mod:`rlengine.run.checkpoints.saved_specs`), builds the run's transformer chain and
algorithm from them, restores the chosen checkpoint into both, and traces
one greedy step (:mod:`rlengine.policy.build`); the steps converted to LiteRT
models are cached beside the checkpoint (:mod:`rlengine.policy.cache`), and
a later load of the same checkpoint runs them without importing TensorFlow
(docs/predict.md).
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Optional

from rlengine.errors import ConfigError, NotARunDirectory
from rlengine.policy.cache import CachedSteps, cache_key, cache_path, read_cache
from rlengine.policy.saved import Policy
from rlengine.run.checkpoints.choice import (
    LATEST,
    Choice,
    chosen_checkpoint,
    is_sound,
    newest_marked,
    parse_choice,
)
from rlengine.run.checkpoints.rundir import CONFIG_FILE

BACKENDS = ("auto", "tflite", "tensorflow")
SPECS_FILE = "specs.json"  # rlengine.run.checkpoints.saved_specs.SPECS_FILE (that module imports TensorFlow)


def load(run_dir: str, checkpoint: Choice = LATEST, *, backend: str = "auto", seed: Optional[int] = None,
         extra_plugins: Iterable[tuple[str, Any]] = (), disabled_plugins: Iterable[str] = ()) -> Policy:
    """The policy of ``checkpoint`` (``"latest"``, ``"best"`` or an iteration number) of a run directory.

    No environment is built: the specs come from the run's ``specs.json``. A
    run directory written before rlengine saved that file has none; loading
    it builds one environment copy to ask for the specs, and closes it.
    ``backend``: ``"auto"`` converts the steps to LiteRT models in a
    background thread (``predict`` runs TensorFlow until then, and for good
    if the conversion fails), ``"tflite"`` converts before returning (an
    error if it cannot), ``"tensorflow"`` never converts. Both of the first
    take the converted steps cached beside the checkpoint by an earlier load
    when they are there, without importing TensorFlow. ``seed`` seeds the
    sampling of ``predict(..., deterministic=False)`` (default: the run's
    ``train.seed``). Plugins are the installed ones, plus ``extra_plugins``
    (``(name, plugin)`` pairs), less ``disabled_plugins``. Every error is
    one line naming the fix.
    """
    if backend not in BACKENDS:
        raise ConfigError(f"backend {backend!r} is not one of {', '.join(BACKENDS)}")
    config_path = run_config_path(run_dir)
    choice = parse_choice(checkpoint)  # not a choice at all: say so before anything is built
    chosen = None if choice == LATEST else chosen_checkpoint(run_dir, choice)  # checked against its marker
    extra_plugins, disabled_plugins = list(extra_plugins), list(disabled_plugins)
    plugin_names = [*(f"+{name}" for name, _ in extra_plugins), *(f"-{name}" for name in disabled_plugins)]

    def key_of(prefix: str) -> Optional[str]:
        if backend == "tensorflow":
            return None
        return cache_key(prefix, [config_path, os.path.join(run_dir, SPECS_FILE)], plugin_names)

    def built(seed: Optional[int], chosen: Optional[str]) -> tuple[Any, int]:
        from rlengine.quiet_tensorflow import import_tensorflow

        import_tensorflow()
        from rlengine.policy.build import traced_steps
        from rlengine.run.process.runtime import warm_up

        warm_up()  # TensorFlow's one-time notices on first use are silenced here as in a run

        return traced_steps(run_dir, config_path, chosen, seed, key_of, extra_plugins, disabled_plugins)

    # The newest checkpoint's cache serves while its files match its marker; else restoring finds the newest
    # checkpoint that loads, with a warning for each it skips
    candidate = chosen or newest_marked(run_dir)
    key = key_of(candidate)
    cached = read_cache(cache_path(candidate), key) if key else None
    if cached is not None and (chosen or is_sound(candidate)):
        run_seed = cached["description"]["seed"] if seed is None else seed
        return Policy(CachedSteps(cached, lambda: built(run_seed, candidate)[0]), candidate, run_seed)
    steps, run_seed = built(seed, chosen)
    policy = Policy(steps, steps.checkpoint, run_seed)
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
