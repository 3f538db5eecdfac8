"""The ``envpool`` plugin: registers :class:`rlengine_envpool.environment.EnvPoolEnvironment` as ``envpool``.

A run's ``train.env = "envpool/<task id>"`` goes to it (an id ``name/task`` goes to the environment
registered as ``name``), and its settings are the ``[envpool]`` section. The class is registered as a
``"module:Class"`` string, so loading this entry point imports neither EnvPool nor TensorFlow.
"""

from rlengine import hookimpl

#: The rlengine API (hooks and interfaces) this plugin is written against.
RLENGINE_API_VERSION = "1.7"


@hookimpl
def rlengine_register_environments(register):
    register("envpool", "rlengine_envpool.environment:EnvPoolEnvironment")
