"""Registers ``reinforce`` through the public hook (the entry point names this module).

The class is a ``"module:Class"`` string, imported (with TensorFlow) on first
use only, so ``rlengine plugins`` and ``--help`` stay quick.
"""

from rlengine import hookimpl

#: The rlengine API (hooks and interfaces) this plugin is written against.
RLENGINE_API_VERSION = "1.0"


@hookimpl
def rlengine_register_algorithms(register):
    register("reinforce", "rlengine_reinforce.reinforce:Reinforce")
