"""Spec preparation: the one place that derives every tensor spec of a run.

Queues, tensor arrays and replay buffers need static dtypes and shapes, but
an algorithm's rollout info, state and training info are whatever nests it
chooses. So the core runs the algorithm once on zeros (batch of 2) and reads
the specs off its outputs. The dummy step has no side effects: transformers
run without updating, nothing is optimised and nothing is summarised.
"""

from __future__ import annotations

import tensorflow as tf

from rlengine.api import Algorithm
from rlengine.api.data import Experience, LossInfo, Nest, StepType, TimeStep, zeros_from_spec
from rlengine.api.specs import RunSpecs, check_nest
from rlengine.collect.converters import Converters, params_spec, tensor_spec
from rlengine.collect.transformers import TransformerChain
from rlengine.learn.replicas import in_replica_context

DUMMY_BATCH = 2


def prepare_specs(
    raw_time_step_spec: TimeStep,
    action_spec: Nest,
    chain: TransformerChain,
    algorithm: Algorithm,
    converters: Converters,
    names: dict,
) -> RunSpecs:
    """Run the dummy step and collect the specs.

    ``names`` maps ``"algorithm"`` and each transformer's index to the name
    it was registered under, so errors name the plugin at fault.
    """
    raw = zeros_from_spec(raw_time_step_spec, [DUMMY_BATCH])
    raw = raw._replace(step_type=tf.fill([DUMMY_BATCH], StepType.FIRST))
    _check_transformers(chain, raw, names)
    time_step, _ = chain.transform(raw, chain.initial_state(DUMMY_BATCH))
    state = algorithm.initial_state(DUMMY_BATCH)
    policy_step = algorithm.rollout(time_step, state)
    check_nest(f"algorithm {names['algorithm']!r}", "rollout() action", action_spec, policy_step.action)
    check_nest(f"algorithm {names['algorithm']!r}", "rollout() state", algorithm.state_spec, policy_step.state)
    rollout_info = converters.spec_of(policy_step.info)
    time_step_spec: TimeStep = tf.nest.map_structure(tensor_spec, time_step)
    experience = Experience(*time_step_spec, action_spec, params_spec(rollout_info), algorithm.state_spec)
    train_info, loss = in_replica_context(lambda: _dummy_train(algorithm, experience, rollout_info, converters))
    return RunSpecs(raw_time_step_spec, time_step_spec, action_spec, algorithm.state_spec,
                    chain.state_spec, rollout_info, experience, train_info, loss)


def _check_transformers(chain: TransformerChain, raw: TimeStep, names: dict) -> None:
    observation = raw.observation
    for i, transformer in enumerate(chain.transformers):
        observation, state = transformer.transform(observation, raw.step_type, transformer.initial_state(DUMMY_BATCH))
        who = f"transformer {names[i]!r}"
        check_nest(who, "transform() observation", transformer.output_spec, observation)
        check_nest(who, "transform() state", transformer.state_spec, state)


def _dummy_train(algorithm: Algorithm, experience_spec: Experience, rollout_info: Nest,
                 converters: Converters) -> tuple[Nest, LossInfo]:
    """Derive the training-info and loss specs the way the learner will call train_step.

    On-policy the learner flattens ``[T, B]`` rows (or steps through time);
    from replay a stateless algorithm gets whatever ``preprocess_experience``
    returned. Gradients are computed, never applied.
    """
    length = algorithm.mini_batch_length if algorithm.off_policy else DUMMY_BATCH
    exp = zeros_from_spec(experience_spec, [length, DUMMY_BATCH])  # [T, B]
    exp = exp._replace(rollout_info=converters.from_params(exp.rollout_info, rollout_info))
    batch = algorithm.preprocess_experience(exp)
    state = algorithm.initial_state(DUMMY_BATCH)
    with tf.GradientTape(persistent=True) as tape:
        if algorithm.needs_time_dimension:  # like the learner: step through time, stack the infos [T, B]
            steps = []
            for t in range(tf.nest.flatten(batch)[0].shape[0]):
                step = algorithm.train_step(tf.nest.map_structure(lambda x: x[t], batch), state)
                state = step.state
                steps.append(converters.to_params(step.info))
            info_spec = converters.spec_of(step.info)
            info = converters.from_params(tf.nest.map_structure(lambda *x: tf.stack(x), *steps), info_spec)
        else:
            if not algorithm.off_policy:
                batch = tf.nest.map_structure(lambda t: t[0], batch)  # flattened rows: one slice will do
            step = algorithm.train_step(batch, state)
            info = step.info
    train_info = converters.spec_of(step.info)  # of one step
    loss_info, _ = algorithm.train_complete(tape, info)
    loss = tf.nest.map_structure(lambda t: tensor_spec(t, 0), loss_info)
    return train_info, loss
