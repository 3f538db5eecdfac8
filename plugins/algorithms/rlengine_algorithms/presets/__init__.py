"""Tuned presets of the first-party algorithms: one TOML file per (algorithm, environment) pair.

Each file is ``<algorithm>_<env id>.toml``, a whole config translated from the
RL Zoo's hyperparameters (its header says from which file and key, the Zoo's
budget and published return, and what could not be translated); it is
registered as the preset ``<algorithm>/<env id>``. Only paths are registered
here: a file is read when a run uses it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

PRESETS_DIR = Path(__file__).resolve().parent


def preset_files() -> dict[str, Path]:
    """Preset name (``"ppo/CartPole-v1"``) -> its file, for every file shipped here."""
    files = {}
    for path in sorted(PRESETS_DIR.glob("*.toml")):
        algorithm, _, env = path.stem.partition("_")  # algorithm names have no "_"; env ids may
        files[f"{algorithm}/{env}"] = path
    return files


def register_presets(register: Callable[..., None]) -> None:
    """Register every shipped preset (called by the plugin's ``rlengine_register_presets``)."""
    for name, path in preset_files().items():
        register(name, path)
