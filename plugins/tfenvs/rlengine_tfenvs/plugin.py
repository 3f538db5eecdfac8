"""Entry point of the ``rlengine-tfenvs`` plugin (group ``rlengine``, name ``tfenvs``).

The environments are registered as ``"module:Class"`` strings, imported (with TensorFlow) on
first use only, so ``rlengine plugins`` and ``--help`` stay quick.
"""

from __future__ import annotations

from typing import Callable

from rlengine import hookimpl

#: The rlengine API (hooks and interfaces) this plugin is written against.
RLENGINE_API_VERSION = "1.7"

#: Env id users train on -> "module:Class".
GRAPH_ENVIRONMENTS = {
    "tf/CartPole-v1": "rlengine_tfenvs.cartpole:CartPole",
    "tf/Acrobot-v1": "rlengine_tfenvs.acrobot:Acrobot",
    "tf/MountainCar-v0": "rlengine_tfenvs.mountain_car:MountainCar",
    "tf/MountainCarContinuous-v0": "rlengine_tfenvs.continuous_mountain_car:MountainCarContinuous",
    "tf/Pendulum-v1": "rlengine_tfenvs.pendulum:Pendulum",
}


@hookimpl
def rlengine_register_graph_environments(register: Callable[..., None]) -> None:
    for env_id, reference in GRAPH_ENVIRONMENTS.items():
        register(env_id, reference)
