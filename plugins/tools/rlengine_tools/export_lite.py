"""``rlengine export``'s LiteRT model: the greedy policy of the SavedModel beside it, as ``policy.tflite``,
which LiteRT and NumPy run without TensorFlow or rlengine::

    import numpy as np
    from ai_edge_litert.interpreter import Interpreter

    run = Interpreter(model_path="OUT/policy.tflite").get_signature_runner()
    action = run(in000=observation)["out000"]                  # stateless: observation [B, ...]

A stateful policy (an LSTM, a frame stack) takes ``in000...`` = the
observation's leaves, the step type (int32 [B]: 0 on an episode's first
step, else 1) and the state's leaves, and returns ``out000...`` = the
action's leaves, then the next state's; the state of B new episodes is
``initial_state.npz``'s arrays (one episode's) repeated B times.
``signature.json`` names every input and output (``litert``).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import tensorflow as tf

from rlengine import StepType

LITE_FILE = "policy.tflite"
STATE_FILE = "initial_state.npz"


def _paths(spec: Any, name: str) -> list:
    """``observation``, or ``observation['position']``...: the name of each leaf, in flatten order."""
    if isinstance(spec, dict):
        return [p for key in sorted(spec) for p in _paths(spec[key], f"{name}[{key!r}]")]
    if isinstance(spec, (tuple, list)):
        return [p for i, sub in enumerate(spec) for p in _paths(sub, f"{name}[{i}]")]
    return [name]


def _flat_step(policy: Any) -> tuple[Any, list, list]:
    """The greedy step on flat inputs ``in000...``, returning ``out000...``; and the names of both."""
    observation_spec = policy._time_step_spec.observation
    leaves = tf.nest.flatten(observation_spec)
    state_specs = tf.nest.flatten(policy._state_structure) if policy.stateful else []
    specs = [*leaves, *([tf.TensorSpec([], tf.int32)] + state_specs if policy.stateful else [])]
    signature = [tf.TensorSpec([None, *s.shape], s.dtype, name=f"in{i:03d}") for i, s in enumerate(specs)]
    inputs = _paths(observation_spec, "observation")
    if policy.stateful:
        inputs += ["step_type", *(f"state[{i}]" for i in range(len(state_specs)))]

    def flat(*tensors):
        observation = tf.nest.pack_sequence_as(observation_spec, list(tensors[:len(leaves)]))
        if policy.stateful:
            out = policy._step(observation, tensors[len(leaves)], tuple(tensors[len(leaves) + 1:]))
            results = [*tf.nest.flatten(out["action"]), *out["state"]]
        else:
            results = tf.nest.flatten(policy._action(observation))
        return {f"out{i:03d}": t for i, t in enumerate(results)}

    function = tf.function(flat, autograph=False).get_concrete_function(*signature)
    action_paths = _paths(policy._algorithm.action_spec, "action")
    outputs = [*action_paths, *(f"state[{i}]" for i in range(len(state_specs)))]
    return function, inputs, outputs


def write_lite(policy: Any, directory: str) -> dict:
    """Write ``policy.tflite`` (and ``initial_state.npz`` for a stateful policy) into ``directory``; returns
    what ``signature.json`` says of them."""
    function, inputs, outputs = _flat_step(policy)
    model = tf.lite.TFLiteConverter.from_concrete_functions([function], policy).convert()
    with open(os.path.join(directory, LITE_FILE), "wb") as f:
        f.write(model)
    out = {"file": LITE_FILE, "inputs": {f"in{i:03d}": name for i, name in enumerate(inputs)},
           "outputs": {f"out{i:03d}": name for i, name in enumerate(outputs)}}
    if policy.stateful:
        np.savez(os.path.join(directory, STATE_FILE), *[t.numpy() for t in policy.initial_state(tf.constant(1))])
        out["initial_state"] = STATE_FILE
        out["step_type"] = {"first": int(StepType.FIRST), "mid": int(StepType.MID)}
    return out
