"""The ``gym`` plugin: registers :class:`rlengine_gym.environment.GymEnvironment` under the name ``gym``.

The class is registered as a ``"module:Class"`` string, so loading this entry
point (``rlengine plugins``, ``--help``) imports neither TensorFlow nor
Gymnasium. The ``rlengine/*`` Gymnasium ids are registered by
:mod:`rlengine_gym.test_envs`, which the environment module and the worker
processes import before they make an env.
"""

from rlengine import hookimpl

#: The rlengine API (hooks and interfaces) this plugin is written against.
RLENGINE_API_VERSION = "1.7"


@hookimpl
def rlengine_register_environments(register):
    register("gym", "rlengine_gym.environment:GymEnvironment")
