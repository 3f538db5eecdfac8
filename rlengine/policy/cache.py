"""The converted policy of a checkpoint, cached beside it, so the next :func:`rlengine.load` needs LiteRT
and NumPy only: no TensorFlow, no plugins, no build.

``<checkpoints>/ckpt-<n>.policy.npz`` holds the greedy model, the sampling model
and how much noise it reads (when it converted), the initial state of one
episode, and a description of the observation and action nests. It is
written atomically once both steps are converted and checked
(:mod:`rlengine.policy.traced`), and used only while its key matches: a hash
of the checkpoint's marker (the size and checksum of each of its files), the
run's ``config.toml`` and ``specs.json``, the plugins added or disabled by
name, and :data:`FORMAT`. Anything else (a re-trained run, an edited config,
another rlengine cache format) builds the policy again and rewrites the file.
Writing is best effort: a read-only run directory loads as before.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
from typing import Any, Callable, Iterable, Optional, cast

import numpy as np

from rlengine.files import write_atomically
from rlengine.policy.arrays import Leaf, flatten
from rlengine.policy.lite import LiteStep

FORMAT = 1
SUFFIX = ".policy.npz"
_CACHE_NAME = re.compile(r"^ckpt-(\d+)" + re.escape(SUFFIX) + "$")


def cache_path(prefix: str) -> str:
    return prefix + SUFFIX


def cache_key(prefix: str, run_files: Iterable[str], plugin_names: Iterable[str]) -> Optional[str]:
    """The key of the cache of checkpoint ``prefix``; None when a file it hashes cannot be read."""
    digest = hashlib.sha256(f"rlengine-policy-cache {FORMAT}\n".encode())
    try:
        for path in [f"{prefix}.complete", *run_files]:
            with open(path, "rb") as f:
                content = f.read()
            digest.update(f"{os.path.basename(path)} {len(content)}\n".encode() + content)
    except OSError:
        return None
    digest.update(json.dumps(sorted(plugin_names)).encode())
    return digest.hexdigest()


# -- nests of leaves, as JSON ------------------------------------------------------------------
def rebuild(described: Any) -> Any:
    """The nest of :class:`Leaf` s of a spec nest in ``specs.json``'s form
    (:func:`rlengine.run.checkpoints.saved_specs.encode`), read without TensorFlow; bounds are left out."""
    if "dict" in described:
        return {key: rebuild(value) for key, value in described["dict"].items()}
    if "tuple" in described or "list" in described:
        kind = tuple if "tuple" in described else list
        return kind(rebuild(item) for item in described.get("tuple", described.get("list")))
    return Leaf(tuple(described["shape"]), np.dtype(described["dtype"]))


# -- writing ------------------------------------------------------------------------------------
def write_cache(path: str, key: str, run_seed: int, nests: dict, steps: Any) -> bool:
    """Cache the converted ``steps`` (:class:`~rlengine.policy.traced.TracedSteps`) at ``path``; False when
    they cannot be (an initial state that is not the same for every row) or the directory is not writable.

    ``nests``: the ``observation``, ``action`` and ``state`` specs in ``specs.json``'s form.
    """
    one, three = steps.initial_state(1), steps.initial_state(3)
    if any(not np.array_equal(np.repeat(a, 3, axis=0), b) for a, b in zip(one, three)):
        return False
    sampling = steps.sampling_lite
    description = {"format": FORMAT, "key": key, "seed": run_seed, **nests,
                   "noise": None if sampling is None else list(sampling.noise)}
    arrays = {"description": np.array(json.dumps(description)),
              "greedy": np.frombuffer(steps.greedy.model, np.uint8)}
    if sampling is not None:
        arrays["sampling"] = np.frombuffer(sampling.model, np.uint8)
    arrays.update({f"state{i:03d}": state for i, state in enumerate(one)})
    packed = io.BytesIO()
    np.savez(packed, **arrays)  # type: ignore[arg-type]  # numpy's stubs read the keywords as allow_pickle
    try:
        write_atomically(path, packed.getvalue())
    except OSError:
        return False
    _remove_orphans(os.path.dirname(path))
    return True


def _remove_orphans(directory: str) -> None:
    """Remove the caches of checkpoints training has since deleted (no marker left)."""
    for name in os.listdir(directory):
        match = _CACHE_NAME.match(name)
        if match and not os.path.exists(os.path.join(directory, f"ckpt-{match.group(1)}.complete")):
            try:
                os.remove(os.path.join(directory, name))
            except OSError:
                pass


# -- reading ------------------------------------------------------------------------------------
def read_cache(path: str, key: str) -> Optional[dict]:
    """The cached arrays at ``path`` and its ``description``, if its key is ``key``; else None (missing,
    stale or unreadable)."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
        description = json.loads(str(arrays.pop("description")))
    except (OSError, ValueError, KeyError):
        return None
    if description.get("format") != FORMAT or description.get("key") != key:
        return None
    return {"description": description, **arrays}


class CachedSteps:
    """The steps of a cached policy, on LiteRT; what needs TensorFlow (a sampling step that did not
    convert) builds the run through ``full`` (a function returning its
    :class:`~rlengine.policy.traced.TracedSteps`), once."""

    algorithm = transformers = None
    conversion_error = None

    def __init__(self, cached: dict, full: Callable[[], Any]):
        description = cached["description"]
        self.observation_spec, self.action_spec = rebuild(description["observation"]), rebuild(description["action"])
        observations = flatten(self.observation_spec)
        state_leaves = [rebuild(s) for s in description["state"]]
        self.stateful = bool(state_leaves)
        self._state = tuple(cached[f"state{i:03d}"] for i in range(len(state_leaves)))
        shapes = [list(leaf.shape) for leaf in [*observations, Leaf((), np.dtype(np.int32)), *state_leaves]]
        outputs = len(flatten(self.action_spec)) + len(state_leaves)
        self.greedy = LiteStep(cached["greedy"].tobytes(), shapes, outputs, len(observations))
        noise = description["noise"]
        self._sampling = None if noise is None else LiteStep(cached["sampling"].tobytes(), shapes, outputs,
                                                             len(observations), tuple(noise))
        self._full, self._built = full, cast(Any, None)  # the full policy, built only if ever needed

    def initial_state(self, rows: int) -> tuple:
        return tuple(np.repeat(state, rows, axis=0) for state in self._state)

    def sampling(self) -> Any:
        if self._sampling is not None:
            return self._sampling
        if self._built is None:
            self._built = self._full()
        return self._built.sampling()

    def convert(self) -> None:
        """Already converted."""

    def convert_in_background(self) -> None:
        """Already converted."""

    def wait(self, timeout: Optional[float] = None) -> None:
        """Nothing is converting."""
