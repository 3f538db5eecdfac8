"""The marker plugins decorate their hook implementations with, and the plugin API's version."""

from __future__ import annotations

import pluggy

PROJECT = "rlengine"  # the pluggy project name and the entry-point group

#: Version of the plugin API (hooks and interfaces). Plugins state the range
#: they support; a change that breaks plugins bumps the major number.
API_VERSION = "1.12"

#: The core's version, ``rlengine.__version__`` (defined here so that the plugin host,
#: which reports it for the built-in plugins, need not import the facade above it).
CORE_VERSION = "0.1.0"

hookimpl: pluggy.HookimplMarker = pluggy.HookimplMarker(PROJECT)
hookspec: pluggy.HookspecMarker = pluggy.HookspecMarker(PROJECT)
