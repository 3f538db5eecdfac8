"""The env threads and actor threads of the asynchronous pipeline.

An env thread owns one batched environment and loops::

    carry, version = start()                  # reset, first request, first answer
    while running:
        carry, version = unroll(carry, version)   # T steps, then the unroll goes to the learner

One ``unroll`` is one ``tf.function`` call: each step transforms the raw
time step, resets the policy state at FIRST, puts a request on its actor's
queue, waits for the answer on its own return queue and steps the
environment (``tf.numpy_function``). Policy and transformer state stay in
the env thread; they travel with each request.

An actor thread runs ``serve()`` in a graph loop (one call until the queues
close): each batch, it waits for one request, takes every
other request already waiting (up to one per env thread it serves),
runs one batched ``rollout`` for all of them, and answers each env thread
with its own rows, stamped with the policy version that acted.

With ``async.num_actor_threads = 0`` there are no actor threads: each env
thread runs the policy itself inside its unroll. That is the better choice
when there is nothing to batch across env threads (one env thread, or
policies so small that batching saves nothing): an actor thread then only
adds two queue hops and a thread wake-up to every step.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf

from rlengine.api import Algorithm, Environment
from rlengine.api.data import Experience, Nest
from rlengine.api.placement import on_device
from rlengine.api.specs import RunSpecs
from rlengine.collect.converters import Converters
from rlengine.collect.fixed_signature import FixedSignatureFunction
from rlengine.collect.policy_step import act, observe
from rlengine.collect.stepper import stepper_for
from rlengine.collect.transformers import TransformerChain
from rlengine.collect.unroll import Carry, unroll
from rlengine.pipelines.threaded.coordinator import Coordinator
from rlengine.pipelines.threaded.queues import Answer, Request, RunQueues, Unroll


class PolicyActor:
    """Runs the policy on a batch of rows and stamps the answer with the policy version that acted."""

    def __init__(self, algorithm: Algorithm, converters: Converters, specs: RunSpecs,
                 random_actions: tf.Variable, policy_version: tf.Variable, device: str = ""):
        self.algorithm, self.converters, self.specs = algorithm, converters, specs
        self.random_actions, self.policy_version = random_actions, policy_version
        self.device = device  # train.actor_device

    def answer(self, time_step: Any, state: Nest, rows: Any) -> Answer:
        version = self.policy_version.read_value()
        with on_device(self.device):
            action, state, info = act(self.algorithm, self.converters, self.specs, self.random_actions,
                                      time_step, state, rows)
        return Answer(action, state, info, version)


class EnvThread:
    """Steps one batched environment, asking actor thread ``actor`` for every action
    (``actor=None``: acting itself with ``policy``)."""

    def __init__(self, index: int, env: Environment, chain: TransformerChain, algorithm: Algorithm,
                 specs: RunSpecs, queues: RunQueues, actor: int | None, policy: PolicyActor, unroll_length: int):
        self.index, self.env, self.chain, self.algorithm, self.specs = index, env, chain, algorithm, specs
        self.caller = stepper_for(env, specs.raw_time_step)
        self.batch = env.batch_size
        self.actor, self.policy = actor, policy
        # Kinds of queue (structure and shapes); the queues themselves come with each call, as handles.
        self._kinds = (None, None, queues.learner) if actor is None else (
            queues.actors[actor], queues.answers[index], queues.learner)
        self.unroll_length = unroll_length
        self.env_steps = 0  # collected by this thread; read by the learner for summaries
        self.start = tf.function(self._start, autograph=False)
        self.unroll = FixedSignatureFunction(self._unroll)

    def describe(self) -> str:
        first = self.env.first_env_id
        return f"env {self.env.env_id!r}, copies {first}..{first + self.batch - 1}"

    def handles(self, queues: RunQueues) -> tuple:
        if self.actor is None:
            return None, None, queues.learner.handle
        return queues.actors[self.actor].handle, queues.answers[self.index].handle, queues.learner.handle

    def run(self, coordinator: Coordinator, queues: RunQueues) -> None:
        handles = self.handles(queues)
        try:
            carry, version = self.start(handles)
            while not coordinator.should_stop():
                carry, version = self.unroll(carry, version, tf.constant(self._restarts()), handles)
                self.env_steps += self.unroll_length * self.batch
        except tf.errors.OpError as exc:
            if self.caller.error is not None:  # the environment raised: report its error, not the graph's
                raise self.caller.error from exc
            raise

    def _restarts(self) -> Any:
        """How often the (fault-guarded) environment has been recreated; 0 for an unguarded one."""
        return np.int64(getattr(self.env, "restarts", 0))

    def _queues(self, handles: tuple) -> tuple:
        return tuple(None if kind is None else kind.view(h) for kind, h in zip(self._kinds, handles))

    def _act(self, raw: Any, transformer_state: tuple, policy_state: Nest, handles: tuple) -> tuple:
        time_step, transformer_state, state = observe(self.chain, self.algorithm, raw, transformer_state,
                                                      policy_state, self.batch)
        answer = self._ask(time_step, state, handles)
        exp = Experience(*time_step, answer.action, answer.info, state)
        return Carry(exp, transformer_state, answer.state), answer.version

    def _ask(self, time_step: Any, state: Nest, handles: tuple) -> Answer:
        if self.actor is None:
            return self.policy.answer(time_step, state, self.batch)
        requests, answers, _ = self._queues(handles)
        thread = tf.fill([self.batch], tf.constant(self.index, tf.int32))
        sent = requests.enqueue(Request(time_step, state, thread))
        with tf.control_dependencies([sent]):
            return answers.dequeue((self.batch_shape, self.batch_shape, self.batch_shape, []))

    @property
    def batch_shape(self) -> list:
        return [self.batch]

    def _start(self, handles: tuple) -> tuple:
        env_state, raw = self.caller.reset()
        carry, version = self._act(raw, self.chain.initial_state(self.batch), self.algorithm.initial_state(self.batch),
                                   handles)
        return carry._replace(env_state=env_state), version

    def _unroll(self, carry: Carry, version: Any, restarts: Any, handles: tuple) -> tuple:
        """``unroll_length`` steps; puts ``[T + 1, B]`` rows on the learner queue.

        ``version`` is the policy version of the carried row, the oldest
        that acted in this unroll, so the learner can measure the lag.
        ``restarts`` is the environment's restart count before the unroll:
        if it grew, the rows straddle a crash and the unroll goes out
        marked ``broken``.
        """
        experience, carry, last_version = unroll(
            self.caller, lambda raw, t_state, p_state: self._act(raw, t_state, p_state, handles), carry, version,
            self.specs,
            self.unroll_length, self.batch)
        with tf.control_dependencies(tf.nest.flatten(experience)):  # read it after the last step, not before
            restarted = tf.numpy_function(self._restarts, [], tf.int64, stateful=True)
        broken = tf.not_equal(tf.reshape(restarted, []), restarts)
        sent = self._queues(handles)[2].enqueue(Unroll(experience, version, tf.constant(self.index, tf.int32), broken))
        with tf.control_dependencies([sent]):
            return tf.nest.map_structure(tf.identity, (carry, last_version))


class ActorThread:
    """Computes actions for the env threads it serves, batching their requests."""

    def __init__(self, index: int, policy: PolicyActor, queues: RunQueues, served: list):
        self.index, self.policy = index, policy
        self.served = served  # indices of the env threads whose requests come to this actor
        self._kinds = (queues.actors[index], [queues.answers[i] for i in served])  # as in EnvThread
        # rollouts run and rows acted on, counted inside the graph; read by the learner for summaries
        self._calls = tf.Variable(0, dtype=tf.int64, trainable=False, name=f"actor_{index}_calls")
        self._rows = tf.Variable(0, dtype=tf.int64, trainable=False, name=f"actor_{index}_rows")
        self.serve_until_closed = tf.function(self._serve_until_closed, autograph=False)

    @property
    def calls(self) -> int:
        return int(self._calls.numpy())

    @property
    def rows(self) -> int:
        return int(self._rows.numpy())

    def describe(self) -> str:
        return f"serving env threads {', '.join(map(str, self.served))}"

    def run(self, coordinator: Coordinator, queues: RunQueues) -> None:
        handles = (queues.actors[self.index].handle, [queues.answers[i].handle for i in self.served])
        while not coordinator.should_stop():
            self.serve_until_closed(handles)  # returns only by raising, once the queues close

    def _serve_until_closed(self, handles: tuple) -> Any:
        """Serve batch after batch in one graph call: no Python between env steps, so the actor
        takes no interpreter time from the learner (a Python call per batch did: docs/performance.md)."""
        def serve_one(i):
            rows = self._serve(handles)
            counted = [self._calls.assign_add(1), self._rows.assign_add(tf.cast(rows, tf.int64))]
            with tf.control_dependencies(counted):
                return i + 1

        return tf.while_loop(lambda i: True, serve_one, (tf.constant(0),), parallel_iterations=1)

    def _take_requests(self, requests: Any) -> Request:
        """One request (waiting for it), then those already queued, concatenated over rows."""
        structure = requests.structure
        flat_spec = tf.nest.flatten(structure)
        arrays = [tf.TensorArray(s.dtype, size=0, dynamic_size=True, infer_shape=False,
                                 element_shape=[None, *s.shape]) for s in flat_spec]

        def take(i, arrays):
            request = tf.nest.flatten(requests.dequeue([None]))
            return i + 1, [a.write(i, x) for a, x in zip(arrays, request)]

        _, arrays = take(0, arrays)
        more = tf.minimum(requests.size(), len(self.served) - 1)
        _, arrays = tf.while_loop(lambda i, _: i < more + 1, take, (tf.constant(1), arrays),
                                  parallel_iterations=1)
        return tf.nest.pack_sequence_as(structure, [a.concat() for a in arrays])

    def _serve(self, handles: tuple) -> Any:
        requests = self._kinds[0].view(handles[0])
        answers = {i: kind.view(h) for i, kind, h in zip(self.served, self._kinds[1], handles[1])}
        request = self._take_requests(requests)
        rows = tf.shape(request.thread)[0]
        answer = self.policy.answer(request.time_step, request.state, rows)
        answered = [self._answer(answers[i], i, request.thread, answer) for i in self.served]
        with tf.control_dependencies(answered):
            return tf.identity(rows)

    def _answer(self, queue: Any, thread: int, threads: Any, answer: Answer) -> Any:
        """Send env thread ``thread`` its rows, if it asked in this batch."""
        rows = tf.reshape(tf.where(tf.equal(threads, thread)), [-1])

        def send():
            action, state, info = tf.nest.map_structure(lambda t: tf.gather(t, rows), answer[:3])
            sent = queue.enqueue(Answer(action, state, info, answer.version))
            with tf.control_dependencies([sent]):
                return tf.constant(True)

        return tf.cond(tf.size(rows) > 0, send, lambda: tf.constant(False))
