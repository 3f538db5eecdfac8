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
taken over each shard instead. On one machine the strategy is TensorFlow's mirrored one;
several machines would need its multi-worker strategy, which the engine does not set up.
"""

from __future__ import annotations

from typing import Any, Callable, ContextManager, Optional, Sequence

import tensorflow as tf

from rlengine.api.data import LossInfo
from rlengine.api.placement import checked_device, on_device
from rlengine.errors import ConfigError


class Replicas:
    """The learner's devices, and how one update's rows are split over them."""

    def __init__(self, devices: Sequence[str]):
        self.devices = list(devices)
        self.count = len(self.devices)
        self.strategy = tf.distribute.MirroredStrategy(self.devices)

    def scope(self) -> ContextManager:
        """Variables made in here are mirrored on every device: build the algorithm in it."""
        return self.strategy.scope()

    def loss_and_gradients(self, gradients_of: Callable[[Any], tuple], data: Any) -> tuple[LossInfo, list]:
        """``gradients_of(shard) -> (loss_info, grads_and_vars)`` on each device's shard of ``data``
        (a nest of tensors with rows first, or None); the loss infos and gradients averaged over the shards,
        per-row loss infos (priorities) joined back in row order."""
        for tensor in tf.nest.flatten(data):
            self._check_rows(tensor)
        shards = self.strategy.experimental_distribute_values_from_function(
            lambda context: tf.nest.map_structure(
                lambda t: _shard(t, context.replica_id_in_sync_group, self.count), data))
        variables: list = []

        def on_one_device(shard: Any) -> tuple:
            loss_info, grads_and_vars = gradients_of(shard)
            variables[:] = [v for _, v in grads_and_vars]  # variables cannot be a replica function's outputs
            return loss_info, [g for g, _ in grads_and_vars]

        loss_info, grads = self.strategy.run(on_one_device, args=(shards,))
        loss_info = tf.nest.map_structure(self._joined, loss_info)
        grads = [None if g is None else self.strategy.reduce(tf.distribute.ReduceOp.MEAN, g, axis=None)
                 for g in grads]
        return loss_info, list(zip(grads, variables))

    def _joined(self, value: Any) -> Any:
        """A scalar averaged over the devices; a per-row tensor joined back in the minibatch's row order."""
        first = self.strategy.experimental_local_results(value)[0]
        if first.shape.rank == 0:
            return self.strategy.reduce(tf.distribute.ReduceOp.MEAN, value, axis=None)
        return self.strategy.gather(value, axis=0)

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
