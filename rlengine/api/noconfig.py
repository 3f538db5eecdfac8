"""The config class of a plugin that takes no options."""

from __future__ import annotations

import attrs


@attrs.define
class NoConfig:
    """Config of a plugin that takes no options."""
