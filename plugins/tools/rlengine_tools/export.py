"""``rlengine export``: the greedy policy of a run as a TensorFlow SavedModel.

The model needs TensorFlow only (no rlengine, no plugins, no TFP) to load
and call::

    policy = tf.saved_model.load(OUT_DIR)
    action = policy.action(observation)                  # stateless policies
    state = policy.initial_state(batch_size)             # stateful ones (LSTM, frame_stack)
    out = policy.step(observation, step_type, state)     # out["action"], out["state"]

Observations are raw environment observations with a leading batch
dimension: the run's observation transformers are part of the model and
apply their restored statistics without updating them. Actions are clipped
to the action bounds, as in evaluation. ``signature.json`` and
``README.txt`` in OUT_DIR describe the inputs and outputs, and name the
checkpoint exported (``checkpoint``, ``iteration``, and for the best one
``eval_return``, the evaluation return that made it best).
"""

from __future__ import annotations

import json
import os
import shutil
from typing import Any, Iterable

import numpy as np
import tensorflow as tf

from rlengine import RLEngineError
from rlengine.api import StepType, TimeStep, zeros_from_spec
from rlengine.collect.policy_step import greedy
from rlengine_tools.export_dir import check_out_dir, remove_stale_staging, staging_dir, swap_in, write_marker
from rlengine_tools.export_lite import write_lite

SIGNATURE_FILE = "signature.json"
README_FILE = "README.txt"


def batched(spec: Any) -> Any:
    """Plain ``TensorSpec`` nest with a leading ``None`` batch dimension."""
    return tf.nest.map_structure(lambda s: tf.TensorSpec([None, *s.shape], s.dtype), spec)


def read_variables(functions: list, candidates: list) -> list:
    """The candidates that the traced ``functions`` capture, each once.

    ``ConcreteFunction.variables`` would miss non-trainable ones (normaliser
    statistics), so the captured resource handles are matched instead.
    """
    captured = {id(t) for fn in functions for t in fn.captured_inputs}
    unique = {v.ref(): v for v in candidates}.values()
    return [v for v in unique if id(v.handle) in captured]


class ExportedPolicy(tf.Module):
    """The greedy policy (transformers + ``predict``) as functions of plain tensors.

    Only the variables the traced functions read are tracked, so the
    SavedModel holds no optimizer slots, target networks or replay buffer.
    """

    def __init__(self, time_step_spec: TimeStep, chain: Any, algorithm: Any):
        super().__init__(name="policy")
        # Untracked: saving them would write every variable of the run and
        # make loading depend on their Python classes.
        object.__setattr__(self, "_chain", chain)
        object.__setattr__(self, "_algorithm", algorithm)
        object.__setattr__(self, "_time_step_spec", time_step_spec)
        state_specs = (chain.state_spec, algorithm.state_spec)
        object.__setattr__(self, "_state_structure", state_specs)
        self.stateful = bool(tf.nest.flatten(state_specs))
        observation = batched(time_step_spec.observation)
        state = tuple(batched(tf.nest.flatten(state_specs)))
        step_type = tf.TensorSpec([None], tf.int32)
        if self.stateful:
            self.initial_state = tf.function(self._initial_state, autograph=False,
                                             input_signature=[tf.TensorSpec([], tf.int32)])
            self.step = tf.function(self._step, autograph=False, input_signature=[observation, step_type, state])
            traced = [self.initial_state.get_concrete_function(), self.step.get_concrete_function()]
        else:
            self.action = tf.function(self._action, autograph=False, input_signature=[observation])
            traced = [self.action.get_concrete_function()]
        self.policy_variables = read_variables(traced, [*chain.variables, *algorithm.variables])

    def _time_step(self, observation: Any, step_type: tf.Tensor) -> TimeStep:
        batch = tf.shape(step_type)[0]
        spec = self._time_step_spec
        zeros = tf.zeros([batch], tf.float32)
        return TimeStep(step_type=step_type, reward=zeros, discount=zeros + 1.0, observation=observation,
                        prev_action=zeros_from_spec(spec.prev_action, [batch]),
                        env_id=tf.zeros([batch], tf.int32))

    def _greedy(self, observation: Any, step_type: tf.Tensor, chain_state: Any, policy_state: Any) -> tuple:
        """The evaluator's greedy step for a batch of any size: ``(action, chain_state, policy_state)``."""
        raw = self._time_step(observation, step_type)
        return greedy(self._chain, self._algorithm, raw, chain_state, policy_state, tf.shape(step_type)[0])

    def _action(self, observation: Any) -> Any:
        batch = tf.shape(tf.nest.flatten(observation)[0])[0]
        step_type = tf.fill([batch], tf.constant(StepType.MID, tf.int32))
        # Empty, but with one entry per transformer: the chain pairs them up.
        chain_state, policy_state = self._chain.initial_state(batch), self._algorithm.initial_state(batch)
        action, _, _ = self._greedy(observation, step_type, chain_state, policy_state)
        return action

    def _initial_state(self, batch_size: tf.Tensor) -> tuple:
        state = (self._chain.initial_state(batch_size), self._algorithm.initial_state(batch_size))
        return tuple(tf.nest.flatten(state))

    def _step(self, observation: Any, step_type: tf.Tensor, state: tuple) -> dict:
        chain_state, policy_state = tf.nest.pack_sequence_as(self._state_structure, list(state))
        action, chain_state, policy_state = self._greedy(observation, step_type, chain_state, policy_state)
        return {"action": action, "state": tuple(tf.nest.flatten((chain_state, policy_state)))}


def describe(spec: Any) -> Any:
    """JSON-friendly nest of ``{"shape", "dtype"}`` (and bounds where the spec has them), batched."""

    def leaf(s):
        shape = [None] + [None if d is None else int(d) for d in s.shape.as_list()]
        out = {"shape": shape, "dtype": s.dtype.name}
        if hasattr(s, "minimum"):
            out["minimum"] = np.asarray(s.minimum).tolist()
            out["maximum"] = np.asarray(s.maximum).tolist()
        return out

    described = tf.nest.map_structure(leaf, spec)
    return list(described) if isinstance(described, tuple) else described


def signature(policy: ExportedPolicy, config: Any, checkpoint: dict) -> dict:
    """What ``signature.json`` says about the exported functions; ``checkpoint`` is
    :func:`rlengine_tools.rundir.checkpoint_summary` of the one exported."""
    spec = policy._time_step_spec
    out = {
        "format": 1,
        "algorithm": config.train.algorithm,
        "env": config.train.env,
        "transformers": list(config.train.transformers),
        "checkpoint": checkpoint["checkpoint"],  # relative to the run's checkpoints/: ckpt-12, best/ckpt-12
        "iteration": checkpoint["iteration"],
        "eval_return": checkpoint["eval_return"],  # the best checkpoint's evaluation return in training, else null
        "stateful": policy.stateful,
        "observation": describe(spec.observation),
        "action": describe(policy._algorithm.action_spec),
    }
    if policy.stateful:
        out["functions"] = {
            "initial_state": "initial_state(batch_size: int32 scalar) -> state (tuple of tensors)",
            "step": "step(observation, step_type: int32 [B], state) -> {'action': ..., 'state': ...}",
        }
        out["state"] = describe(tuple(tf.nest.flatten(policy._state_structure)))
    else:
        out["functions"] = {"action": "action(observation) -> action"}
    return out


README = """Greedy policy of an rlengine run ({algorithm} on {env}), exported from {checkpoint}{source}.
Loading and calling it needs TensorFlow only:

    import numpy as np, tensorflow as tf
    policy = tf.saved_model.load("{out_dir}")
{usage}
Observations are the environment's raw observations with a leading batch
dimension B (null in the shapes). The run's observation transformers are
inside the model ({transformers}) and use the checkpoint's statistics, never
updating them. Actions come back batched and clipped to the action bounds.
signature.json lists every shape, dtype and bound.
{lite}"""

LITE_USAGE = """
The same policy runs on LiteRT and NumPy alone (pip install ai-edge-litert
numpy), from {file}; signature.json's "litert" names its inputs and outputs:

    from ai_edge_litert.interpreter import Interpreter
    run = Interpreter(model_path="{out_dir}/{file}").get_signature_runner()
{usage}"""

LITE_STATELESS = """    action = run(in000=observation)["out000"]
"""

LITE_STATEFUL = """    state = [np.repeat(s, B, axis=0) for s in np.load("{out_dir}/{state}").values()]  # B new episodes
    out = run(**{{"in000": observation, "in001": step_type}}, **{{f"in{{2 + i:03d}}": s for i, s in enumerate(state)}})
    # out["out000"] is the action, then the next state (names in signature.json, for nested observations)
"""

STATELESS_USAGE = """    action = policy.action(observation)          # observation: {obs}, action: {act}
"""

STATEFUL_USAGE = """    state = policy.initial_state(B)              # zeros for B episodes
    out = policy.step(observation, step_type, state)
    action, state = out["action"], out["state"]  # pass state back in on the next step
    # step_type is int32 [B]: 0 on an episode's first observation (its state starts afresh), else 1
    # observation: {obs}, action: {act}
"""


def write_description(directory: str, out_dir: str, info: dict) -> None:
    """Write signature.json and README.txt into ``directory`` (the README names ``out_dir``)."""
    with open(os.path.join(directory, SIGNATURE_FILE), "w") as f:
        json.dump(info, f, indent=2)
        f.write("\n")
    usage = STATEFUL_USAGE if info["stateful"] else STATELESS_USAGE
    usage = usage.format(obs=json.dumps(info["observation"]), act=json.dumps(info["action"]))
    source = "" if info.get("eval_return") is None else \
        f" (the best checkpoint: evaluation return {info['eval_return']:.2f} in training)"
    text = README.format(usage=usage, out_dir=out_dir, transformers=", ".join(info["transformers"]) or "none",
                         algorithm=info["algorithm"], env=info["env"], checkpoint=info["checkpoint"], source=source,
                         lite=_lite_usage(out_dir, info.get("litert", {})))
    with open(os.path.join(directory, README_FILE), "w") as f:
        f.write(text)


def _lite_usage(out_dir: str, lite: dict) -> str:
    if "file" not in lite:
        return f"\nNo LiteRT model: {lite['error']}\n" if "error" in lite else ""
    usage = (LITE_STATEFUL if "initial_state" in lite else LITE_STATELESS).format(out_dir=out_dir,
                                                                                  state=lite.get("initial_state"))
    return LITE_USAGE.format(out_dir=out_dir, file=lite["file"], usage=usage)


def first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def add_lite(policy: ExportedPolicy, directory: str, info: dict) -> None:
    """The LiteRT model beside the SavedModel (:mod:`.export_lite`); a step it cannot hold is noted in
    signature.json and the README, and the SavedModel is exported all the same."""
    try:
        info["litert"] = write_lite(policy, directory)
    except Exception as exc:  # the converter raises many kinds; any means: no LiteRT model
        info["litert"] = {"error": f"{type(exc).__name__}: {first_line(exc)}"}


def save(policy: ExportedPolicy, out_dir: str, info: dict) -> None:
    """Write the model beside ``out_dir``, then swap it in (see :mod:`.export_dir`): a failed or killed
    export leaves no half model, and only an earlier export is ever replaced."""
    out_dir = os.path.realpath(out_dir)  # through a symbolic link: the export replaces its target
    tmp = staging_dir(out_dir, "tmp")
    try:
        remove_stale_staging(out_dir)  # what killed exports left beside it
        tf.saved_model.save(policy, tmp)
        add_lite(policy, tmp, info)
        write_description(tmp, out_dir, info)
        write_marker(tmp, info)
        swap_in(tmp, out_dir)
    except (OSError, tf.errors.OpError) as exc:
        raise RLEngineError(f"export to {out_dir!r} failed: {first_line(exc)}; choose a directory you can "
                            "write to (nothing there was changed)") from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # gone already when the swap succeeded


def export_run(root_dir: str, out_dir: str, overrides: Iterable[str] = (), checkpoint: str = "latest",
               **engine_kwargs: Any) -> dict:
    """Export the greedy policy of a checkpoint of ``root_dir`` to ``out_dir``; returns the signature.

    ``checkpoint``: ``"latest"`` (the newest), ``"best"`` or an iteration number.
    """
    from rlengine_tools.rundir import checked_checkpoint, checkpoint_summary, open_run, single_copy_overrides

    check_out_dir(out_dir)
    choice = checked_checkpoint(checkpoint)
    engine = open_run(root_dir, [*single_copy_overrides(), *overrides], command="export", **engine_kwargs)
    with engine.restored(choice) as components:
        summary = checkpoint_summary(engine.newest_checkpoint())  # inside the block: the one restored
        policy = ExportedPolicy(components.specs.raw_time_step, components.chain, components.algorithm)
        info = signature(policy, engine.config, summary)
        save(policy, out_dir, info)
    return info
