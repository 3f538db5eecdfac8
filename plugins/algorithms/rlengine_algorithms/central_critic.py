"""A centralised critic (MAPPO): ``central_critic = true`` in ``[ppo]`` or ``[ac]``.

The critic reads the observation's ``global_state`` leaf (and its ``agent_id`` leaf where there is one);
the actor reads every other leaf. An environment provides the leaf: the pettingzoo plugin's
``[pettingzoo] global_state = true`` adds the game's ``state()`` (or every agent's observation joined) to
each agent's row. The state then serves the critic in training only: acting needs the actor alone, so
an exported policy reads the leaf but never uses it.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from rlengine import ConfigError, without_action_mask

__all__ = ["CRITIC_KEYS", "central_encoders"]

STATE_KEY, AGENT_ID_KEY = "global_state", "agent_id"
#: The leaves the critic reads (``agent_id`` where the observation has it).
CRITIC_KEYS = (STATE_KEY, AGENT_ID_KEY)


class Viewed(tf.Module):
    """An encoder of some leaves of a dict observation."""

    def __init__(self, encoder: Any, keys: tuple, name: str):
        super().__init__(name=name)
        self.encoder, self.keys = encoder, keys
        self.output_size = getattr(encoder, "output_size", None)

    def __call__(self, observation: dict) -> tf.Tensor:
        return self.encoder({key: observation[key] for key in self.keys})


def central_encoders(algorithm: Any, config: Any, name: str) -> tuple:
    """``(actor encoder, critic encoder)``: the critic's reads the global state and agent id, the actor's the rest."""
    spec = without_action_mask(algorithm.time_step_spec.observation)
    if not isinstance(spec, dict) or STATE_KEY not in spec:
        raise ConfigError(f"{name}.central_critic = true needs a dict observation with a {STATE_KEY!r} leaf for the "
                          f"critic, and this environment's has none; for a PettingZoo game set [pettingzoo] "
                          f"global_state = true (or [mpe2] for mpe2/ ids)")
    if config.lstm_size:
        raise ConfigError(f"{name}.central_critic = true needs lstm_size = 0 (the LSTM feeds actor and critic from "
                          f"one encoder)")
    critic_keys = tuple(key for key in CRITIC_KEYS if key in spec)
    actor_keys = tuple(key for key in spec if key != STATE_KEY)
    actor = algorithm.make_encoder(config.encoder, {key: spec[key] for key in actor_keys})
    critic = algorithm.make_encoder(config.encoder, {key: spec[key] for key in critic_keys}, scope="critic_encoder")
    return Viewed(actor, actor_keys, "actor_view"), Viewed(critic, critic_keys, "critic_view")
