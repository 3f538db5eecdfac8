"""Registers the first-party algorithms through the public hook."""

from rlengine import hookimpl

#: The rlengine API (hooks and interfaces) this plugin is written against.
RLENGINE_API_VERSION = "1.0"

@hookimpl
def rlengine_register_algorithms(register):
    from rlengine_algorithms.actor_critic import ActorCritic
    from rlengine_algorithms.dqn import DQN
    from rlengine_algorithms.ppo import PPO
    from rlengine_algorithms.sac import SAC
    from rlengine_algorithms.td3 import TD3

    register("ac", ActorCritic)
    register("ppo", PPO)
    register("sac", SAC)
    register("td3", TD3)
    register("dqn", DQN)
