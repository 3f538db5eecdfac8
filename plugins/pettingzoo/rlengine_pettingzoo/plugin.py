"""The ``pettingzoo`` plugin: registers :class:`rlengine_pettingzoo.environment.PettingZooEnvironment` twice.

As ``pettingzoo`` (ids ``pettingzoo/<family>.<env>``, e.g. ``pettingzoo/classic.connect_four_v3``) and as
``mpe2`` (ids ``mpe2/<env>``, e.g. ``mpe2/simple_spread_v3``): an id ``name/task`` goes to the
environment registered as ``name``, whose settings are the section of that name (``[pettingzoo]`` or
``[mpe2]``, the same keys). The class is registered as a ``"module:Class"`` string, so loading this
entry point imports neither PettingZoo nor TensorFlow.
"""

from rlengine import hookimpl

#: The rlengine API (hooks and interfaces) this plugin is written against.
RLENGINE_API_VERSION = "1.11"

_CLASS = "rlengine_pettingzoo.environment:PettingZooEnvironment"


@hookimpl
def rlengine_register_environments(register):
    register("pettingzoo", _CLASS)
    register("mpe2", _CLASS)
