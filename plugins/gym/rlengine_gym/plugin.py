"""The ``gym`` plugin: registers :class:`GymEnvironment` under the name ``gym``."""

from rlengine import hookimpl
from rlengine_gym import test_envs  # noqa: F401  (registers the rlengine/* Gymnasium ids)
from rlengine_gym.environment import GymEnvironment

#: The rlengine API (hooks and interfaces) this plugin is written against.
RLENGINE_API_VERSION = "1.0"


@hookimpl
def rlengine_register_environments(register):
    register("gym", GymEnvironment)
