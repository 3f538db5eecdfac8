"""Classic-control environments written in TensorFlow: graph environments for rlengine.

``tf/CartPole-v1``, ``tf/Acrobot-v1``, ``tf/MountainCar-v0``, ``tf/MountainCarContinuous-v0`` and
``tf/Pendulum-v1`` reproduce Gymnasium's environments of the same names; they are registered by
:mod:`rlengine_tfenvs.plugin` through ``rlengine_register_graph_environments``.
:class:`GraphEnvAsGymnasium` hands one of them to other libraries as a ``gymnasium.Env``.

The names below load on first use: the entry point imports this package, and listing plugins
must not import TensorFlow.
"""

from __future__ import annotations

from rlengine.lazy import lazy_facade

__version__ = "0.1.0"

#: Public name -> the module that defines it.
_WHERE = {
    "Acrobot": "rlengine_tfenvs.acrobot",
    "CartPole": "rlengine_tfenvs.cartpole",
    "GraphEnvAsGymnasium": "rlengine_tfenvs.gymnasium_adapter",
    "MountainCar": "rlengine_tfenvs.mountain_car",
    "MountainCarContinuous": "rlengine_tfenvs.continuous_mountain_car",
    "Pendulum": "rlengine_tfenvs.pendulum",
    "PhysicsEnvironment": "rlengine_tfenvs.base",
    "register_gymnasium_ids": "rlengine_tfenvs.gymnasium_adapter",
}

__getattr__, __dir__, __all__ = lazy_facade(globals(), _WHERE, eager=["__version__"])
