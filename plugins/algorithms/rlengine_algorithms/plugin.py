"""Registers the first-party algorithms, encoders and tuned presets through the public hooks.

Each class is a ``"module:Class"`` string, imported (with TensorFlow) on first
use only, so ``rlengine plugins`` and ``--help`` stay quick; each preset is the
path of a TOML file, read only by the run that uses it.
"""

from rlengine import hookimpl
from rlengine_algorithms.presets import register_presets

#: The rlengine API (hooks and interfaces) this plugin is written against: 1.4 added the network hook.
RLENGINE_API_VERSION = "1.4"

#: Registered name -> "module:Class"; the name is also the algorithm's TOML section.
ALGORITHMS = {
    "ac": "rlengine_algorithms.actor_critic:ActorCritic",
    "ppo": "rlengine_algorithms.ppo:PPO",
    "sac": "rlengine_algorithms.sac:SAC",
    "td3": "rlengine_algorithms.td3:TD3",
    "dqn": "rlengine_algorithms.dqn:DQN",
}

#: Registered name -> "module:Class" of the encoders; the name is also the encoder's TOML section.
ENCODERS = {
    "flatten": "rlengine_algorithms.encoders:Flatten",
    "mlp": "rlengine_algorithms.encoders:MLPEncoder",
    "nature_cnn": "rlengine_algorithms.encoders:NatureCNN",
    "impala_cnn": "rlengine_algorithms.encoders:ImpalaCNN",
    "multi": "rlengine_algorithms.encoders:Multi",
}


@hookimpl
def rlengine_register_algorithms(register):
    for name, reference in ALGORITHMS.items():
        register(name, reference)


@hookimpl
def rlengine_register_networks(register):
    for name, reference in ENCODERS.items():
        register(name, reference)


@hookimpl
def rlengine_register_presets(register):
    register_presets(register)
