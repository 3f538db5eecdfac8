"""The ``gym`` plugin: registers :class:`GymEnvironment` under the name ``gym``."""

from rlengine import hookimpl
from rlengine_gym import test_envs  # noqa: F401  (registers the rlengine/* Gymnasium ids)
from rlengine_gym.environment import GymEnvironment


@hookimpl
def rlengine_register_environments(register):
    register("gym", GymEnvironment)
