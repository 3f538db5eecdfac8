"""Registers the first-party algorithms through the public hook."""

from rlengine import hookimpl


@hookimpl
def rlengine_register_algorithms(register):
    from rlengine_algorithms.actor_critic import ActorCritic
    from rlengine_algorithms.ppo import PPO

    register("ac", ActorCritic)
    register("ppo", PPO)
