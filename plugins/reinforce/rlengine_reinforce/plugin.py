"""Registers ``reinforce`` through the public hook (the entry point names this module)."""

from rlengine import hookimpl
from rlengine_reinforce.reinforce import Reinforce

#: The rlengine API (hooks and interfaces) this plugin is written against.
RLENGINE_API_VERSION = "1.0"


@hookimpl
def rlengine_register_algorithms(register):
    register("reinforce", Reinforce)
