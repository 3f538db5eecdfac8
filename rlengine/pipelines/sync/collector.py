"""The synchronous collector: one batched environment unrolled with the rollout policy.

One call of :meth:`Collector.run` is one ``tf.function`` call that steps the
environment ``unroll_length`` times (a Python environment is reached through
``tf.numpy_function``, a graph environment is part of the graph: :mod:`rlengine.collect.stepper`),
so the Python-to-graph cost is paid once per unroll, not once per step.
"""

from __future__ import annotations

import tensorflow as tf

from rlengine.api import Algorithm, Environment, GraphEnvironment
from rlengine.api.data import Experience, Nest, TimeStep
from rlengine.api.placement import on_device
from rlengine.api.specs import RunSpecs
from rlengine.collect.converters import Converters
from rlengine.collect.policy_step import act, observe
from rlengine.collect.stepper import stepper_for
from rlengine.collect.stepping_function import SteppingFunction
from rlengine.collect.transformers import TransformerChain
from rlengine.collect.unroll import Carry, unroll


class Collector:
    """Collects experience from one batched environment, one unroll per call."""

    def __init__(self, env: Environment | GraphEnvironment, chain: TransformerChain, algorithm: Algorithm,
                 specs: RunSpecs, converters: Converters, unroll_length: int, device: str = "",
                 jit_compile: bool = False):
        self.env = stepper_for(env, specs.raw_time_step)
        self.chain = chain
        self.algorithm = algorithm
        self.specs = specs
        self.converters = converters
        self.unroll_length = unroll_length
        self.device = device  # where the policy acts (train.actor_device); the env steps on the host
        self.batch = env.batch_size
        #: While True, actions are uniformly random (off-policy initial collection);
        #: the algorithm's rollout still runs, so the stored info keeps its spec.
        self.random_actions = tf.Variable(False, trainable=False, name="random_actions")
        # autograph=False (inside): the loops below are explicit, and converting the
        # algorithm's source on first trace cost more than the training.
        self.run = SteppingFunction(self._run, self.env)
        #: ``train.jit_compile_unroll``: a graph environment's unroll as one XLA program, also inside a pipeline's
        #: larger graph (a Python environment's steps call Python, which XLA cannot compile)
        self.jit_compile = jit_compile and not self.env.calls_python
        self._unroll = tf.function(self._unroll_steps, jit_compile=True, autograph=False) if self.jit_compile \
            else self._unroll_steps
        # eagerly: it runs once a run (or after an env restart), where tracing it cost three times as long
        self.start = self._start

    def _act(self, raw: TimeStep, transformer_state: tuple, policy_state: Nest) -> tuple:
        with on_device(self.device):
            time_step, transformer_state, state = observe(self.chain, self.algorithm, raw, transformer_state,
                                                          policy_state, self.batch)
            action, next_state, info = act(self.algorithm, self.converters, self.specs, self.random_actions,
                                           time_step, state, self.batch)
        exp = Experience(*time_step, action, info, state)
        return Carry(exp, transformer_state, next_state), ()

    def _start(self) -> Carry:
        """Reset the environment and act on the first steps."""
        env_state, raw = self.env.reset()
        carry, _ = self._act(raw, self.chain.initial_state(self.batch), self.algorithm.initial_state(self.batch))
        return carry._replace(env_state=env_state)

    def _run(self, carry: Carry) -> tuple[Experience, Carry]:
        """Step ``unroll_length`` times; returns ``[T + 1, B]`` rows and the next carry."""
        return self._unroll(carry)

    def _unroll_steps(self, carry: Carry) -> tuple[Experience, Carry]:
        experience, carry, _ = unroll(self.env, self._act, carry, (), self.specs, self.unroll_length,
                                      self.batch)
        return experience, carry
