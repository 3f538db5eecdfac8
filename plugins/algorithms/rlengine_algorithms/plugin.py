"""Registers the first-party algorithms through the public hook.

Each is a ``"module:Class"`` string, imported (with TensorFlow) on first use
only, so ``rlengine plugins`` and ``--help`` stay quick.
"""

from rlengine import hookimpl

#: The rlengine API (hooks and interfaces) this plugin is written against.
RLENGINE_API_VERSION = "1.0"

#: Registered name -> "module:Class"; the name is also the algorithm's TOML section.
ALGORITHMS = {
    "ac": "rlengine_algorithms.actor_critic:ActorCritic",
    "ppo": "rlengine_algorithms.ppo:PPO",
    "sac": "rlengine_algorithms.sac:SAC",
    "td3": "rlengine_algorithms.td3:TD3",
    "dqn": "rlengine_algorithms.dqn:DQN",
}


@hookimpl
def rlengine_register_algorithms(register):
    for name, reference in ALGORITHMS.items():
        register(name, reference)
