"""Data-parallel updates: each minibatch split over several devices (``train.learner_devices``).

With two or more learner devices the algorithm's variables are mirrored on every one (a
``tf.distribute.MirroredStrategy``), and the learner runs each update so::

    shards = split(minibatch, len(devices))          # equal blocks of rows, one per device
    gradients = strategy.run(loss_and_gradients, shards)
    gradients = mean(gradients)                     # all-reduced over the devices
    algorithm.apply_gradients(gradients)            # once, in cross-replica context: every copy alike
    algorithm.after_update()                        # target networks too

A minibatch's mean loss is the mean of its equal shards' mean losses, so an algorithm whose
loss is a mean over rows takes the same step as on one device, within float rounding.
Statistics an algorithm takes over the whole minibatch (PPO's advantage normalisation) are
taken over each shard instead. On one machine the strategy is TensorFlow's mirrored one.

Several processes (``train.learner_workers``, one machine or many) use TensorFlow's multi-worker
strategy instead: each worker is a whole run of the same config that collects its own data and
feeds its own whole minibatch, and every update's gradients are averaged over the workers, so each
step is the one a single learner would take on all their minibatches together (equal sizes), and
every worker's variables stay equal (the chief's initial values are broadcast when they are
made). What ends a run early is agreed on (:meth:`Replicas.chief_says`), since a worker that stopped
alone would leave the others waiting at their next update.
"""

from __future__ import annotations

from typing import Any, Callable, ContextManager, Optional, Sequence

import attrs
import tensorflow as tf

from rlengine.api.data import LossInfo
from rlengine.api.placement import checked_device, on_device
from rlengine.errors import ConfigError

#: worker i's seed is the chief's plus this times i
WORKER_SEED_STRIDE = 10007
#: what a collective of a multi-worker learner raises when a worker is gone
LOST_WORKER_ERRORS = (tf.errors.UnavailableError, tf.errors.AbortedError, tf.errors.CancelledError)
#: the process's multi-worker strategy, by (addresses, index): TensorFlow sets up one, before its first op
_WORKERS: dict = {}


class Replicas:
    """The learner's devices (or worker processes), and how one update's rows are split over them."""

    def __init__(self, devices: Sequence[str] = (), strategy: Any = None, worker_index: int = 0):
        self.devices = list(devices)
        self.strategy = strategy or tf.distribute.MirroredStrategy(self.devices)
        self.count = self.strategy.num_replicas_in_sync
        self.workers = strategy is not None  # each worker feeds its own whole minibatch: nothing is split
        self.worker_index = worker_index
        # one graph for every gather (an eager one would trace a new function each call)
        self._gather = tf.function(self._every_workers, input_signature=[tf.TensorSpec([1], tf.int64)],
                                   autograph=False)

    def scope(self) -> ContextManager:
        """Variables made in here are mirrored on every device: build the algorithm in it."""
        return self.strategy.scope()

    def loss_and_gradients(self, gradients_of: Callable[[Any], tuple], data: Any) -> tuple[LossInfo, list]:
        """``gradients_of(shard) -> (loss_info, grads_and_vars)`` on each device's shard of ``data``
        (a nest of tensors with rows first, or None); the loss infos and gradients averaged over the shards,
        per-row loss infos (priorities) joined back in row order."""
        if self.workers:
            shards = data  # one replica in each worker process: its own rows
        else:
            for tensor in tf.nest.flatten(data):
                self._check_rows(tensor)
            shards = self.strategy.experimental_distribute_values_from_function(
                lambda context: tf.nest.map_structure(
                    lambda t: _shard(t, context.replica_id_in_sync_group, self.count), data))
        variables: list = []
        layout: dict = {}  # what the packed vector holds, found when the replica function is traced

        def on_one_device(shard: Any) -> tuple:
            loss_info, grads_and_vars = gradients_of(shard)
            variables[:] = [v for _, v in grads_and_vars]  # variables cannot be a replica function's outputs
            grads = [None if g is None else tf.reshape(tf.convert_to_tensor(g), v.shape) for g, v in grads_and_vars]
            leaves = [tf.convert_to_tensor(x) for x in tf.nest.flatten(loss_info)]
            averaged = [g for g in grads if g is not None] + [x for x in leaves if x.shape.rank == 0]
            layout.update(loss_info=loss_info, leaves=leaves, grads=grads, averaged=averaged)
            # every gradient and scalar loss in one all-reduce: one collective per tensor costs far more
            packed = tf.concat([tf.reshape(tf.cast(x, tf.float32), [-1]) for x in averaged], 0)
            return packed, [x for x in leaves if x.shape.rank != 0]  # per-row leaves (priorities)

        packed, rows = self.strategy.run(on_one_device, args=(shards,))
        mean = self.strategy.reduce(tf.distribute.ReduceOp.MEAN, packed, axis=None)
        rows = [tf.concat(self.strategy.experimental_local_results(r), 0) for r in rows]  # in row order
        return self._unpacked(mean, rows, layout, variables)

    @staticmethod
    def _unpacked(mean: Any, rows: list, layout: dict, variables: list) -> tuple:
        """The averaged gradients and loss info out of the packed vector, the per-row leaves joined."""
        values, offset = {}, 0
        for x in layout["averaged"]:
            size = x.shape.num_elements()
            values[id(x)] = tf.cast(tf.reshape(mean[offset:offset + size], x.shape), x.dtype)
            offset += size
        grads = [None if g is None else values[id(g)] for g in layout["grads"]]
        joined = iter(rows)
        leaves = [values[id(x)] if id(x) in values else next(joined) for x in layout["leaves"]]
        return tf.nest.pack_sequence_as(layout["loss_info"], leaves), list(zip(grads, variables))

    def chief_says(self, value: int) -> int:
        """The chief worker's ``value`` (e.g. whether to stop now), on every worker; ``value`` unchanged
        with one process. Every worker must ask at the same point of its loop."""
        return int(self.every_workers(value)[0])

    def check_resumed_together(self, iteration: int) -> None:
        """One line unless every worker restored the same iteration (a crash between their checkpoints)."""
        iterations = self.every_workers(iteration)
        if len(set(iterations)) > 1:
            raise ConfigError(f"train.learner_workers: the workers resumed at iterations {iterations} (the chief "
                              "first), and they must resume one: delete the newer checkpoints (checkpoints/ckpt-N.*) "
                              "of the workers ahead, then start every worker again")

    def lost_a_worker(self, error: BaseException) -> bool:
        """Whether ``error`` is a collective's, failed because another worker is gone."""
        return self.workers and isinstance(error, LOST_WORKER_ERRORS)

    def every_workers(self, value: int) -> list:
        """``value`` of each worker, in worker order (``[value]`` with one process)."""
        if not self.workers:
            return [value]
        return self._gather(tf.constant([value], tf.int64)).numpy().tolist()

    def _every_workers(self, value: Any) -> Any:
        return self.strategy.gather(self.strategy.run(tf.identity, args=(value,)), axis=0)

    def _check_rows(self, tensor: Any) -> None:
        rows = None if tensor is None else tensor.shape[0]
        if rows is not None and rows % self.count:
            raise ConfigError(
                f"train.learner_devices splits each minibatch over {self.count} devices, but a minibatch has "
                f"{rows} rows: make the algorithm's mini_batch_size (on-policy: the unroll's rows per "
                f"minibatch) a multiple of {self.count}")


def _shard(tensor: Any, index: int, count: int) -> Any:
    if tensor is None:
        return None
    size = tf.shape(tensor)[0] // count
    return tensor[index * size:(index + 1) * size]


def in_replica_context(fn: Callable[[], Any]) -> Any:
    """``fn()``, run as each replica would run it when several learner devices are in scope (their first
    result: the same on every one); tapes cannot differentiate mirrored variables elsewhere."""
    if not tf.distribute.in_cross_replica_context():
        return fn()
    results: list = []
    logger, level = tf.get_logger(), tf.get_logger().level
    logger.setLevel("ERROR")  # run eagerly once, at build time: TensorFlow's advice to trace it does not apply
    try:
        tf.distribute.get_strategy().run(lambda: results.append(fn()))
    finally:
        logger.setLevel(level)
    return results[0]


def learner_replicas(train: Any) -> Optional[Replicas]:
    """The replicas ``train.learner_devices`` asks for, or None for one device (the plain learner)."""
    devices = list(train.learner_devices)
    if not devices:
        return None
    for device in devices:
        checked_device("train.learner_devices", device)
    if len(set(devices)) != len(devices):
        raise ConfigError(f"train.learner_devices = {devices} names a device twice: name each device once")
    if train.device:
        raise ConfigError(f"train.device = {train.device!r} and train.learner_devices = {devices} both place the "
                          "learner: set only one of them")
    return Replicas(devices) if len(devices) >= 2 else None


def learner_scope(device: str, replicas: Optional[Replicas]) -> ContextManager:
    """Where the learner's variables are made: mirrored over the replicas, else on ``device``."""
    return replicas.scope() if replicas is not None else on_device(device)


def worker_replicas(train: Any) -> Optional[Replicas]:
    """The multi-worker learner ``train.learner_workers`` asks for (made once per process, before the run's
    first TensorFlow op), or None."""
    workers = list(train.learner_workers)
    if not workers:
        return None
    key = (tuple(workers), train.worker_index)
    if key not in _WORKERS:
        if _WORKERS:
            raise ConfigError("train.learner_workers: this process already joined another multi-worker learner, "
                              "and TensorFlow allows one per process; train each in a process of its own")
        resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
            tf.train.ClusterSpec({"worker": workers}), task_type="worker", task_id=train.worker_index)
        try:  # no collective timeout: TensorFlow keeps two threads per timed collective (thousands an iteration)
            strategy = tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=resolver)
        except RuntimeError as error:  # "Collective ops must be configured at program startup"
            raise ConfigError("train.learner_workers: TensorFlow ran an op in this process before the run was "
                              "built, and it joins workers only before its first op; start each worker as its own "
                              f"'rlengine train' (or build the Engine before any TensorFlow op): {error}") from None
        _WORKERS[key] = Replicas(strategy=strategy, worker_index=train.worker_index)
    return _WORKERS[key]


def checked_workers(train: Any) -> None:
    """One line for ``train.learner_workers`` settings that cannot run; nothing without workers."""
    workers = list(train.learner_workers)
    if not workers:
        return
    if len(workers) < 2:
        raise ConfigError(f"train.learner_workers = {workers} names one worker: name two or more (host:port of "
                          "each, the chief first), or none for one process")
    for address in workers:
        host, _, port = str(address).rpartition(":")
        if not host or not port.isdigit():
            raise ConfigError(f"train.learner_workers: {address!r} is not host:port (e.g. 'localhost:23456')")
    if len(set(workers)) != len(workers):
        raise ConfigError(f"train.learner_workers = {workers} names a worker twice: give each its own address")
    if train.worker_index >= len(workers):
        raise ConfigError(f"train.worker_index = {train.worker_index} is not a place in train.learner_workers "
                          f"(0..{len(workers) - 1}): give each worker's process its own index")
    if train.learner_devices:
        raise ConfigError("train.learner_workers and train.learner_devices both spread the learner: set one of them")
    if train.pipeline != "sync":
        raise ConfigError(f"train.learner_workers needs train.pipeline = 'sync' (each worker collects its own "
                          f"data between updates), not {train.pipeline!r}")
    if not train.root_dir:
        raise ConfigError("train.learner_workers needs train.root_dir (--root-dir), the same for every worker: the "
                          "chief writes there, worker i beside it in ROOT_DIR-worker-i")


def worker_train_config(train: Any) -> Any:
    """``train`` for this worker: the chief's as it is; worker i > 0 writes to ``ROOT_DIR-worker-i`` and seeds
    its environments and sampling with ``seed + 10007 i``, so the workers collect different data."""
    checked_workers(train)
    if not train.learner_workers or train.worker_index == 0:
        return train
    index = train.worker_index
    return attrs.evolve(train, root_dir=f"{train.root_dir.rstrip('/')}-worker-{index}",
                        seed=train.seed + WORKER_SEED_STRIDE * index)
