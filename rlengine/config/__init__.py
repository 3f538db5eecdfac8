"""A run's configuration: the schema (:mod:`.schema`) and how it is read and validated (:mod:`.loading`)."""

from rlengine.config.loading import (
    DEFAULT_CONFIG,
    apply_overrides,
    build_config,
    make_section,
    parse_value,
    read_toml,
)
from rlengine.config.presets import Preset, starting_config
from rlengine.config.schema import CORE_SECTIONS, RENAMED_KEYS, RunConfig, TrainConfig, default_root_dir

__all__ = ["CORE_SECTIONS", "DEFAULT_CONFIG", "RENAMED_KEYS", "Preset", "RunConfig", "TrainConfig", "apply_overrides",
           "build_config", "default_root_dir", "make_section", "parse_value", "read_toml", "starting_config"]
