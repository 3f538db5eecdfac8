"""The ``tensorboard`` writer: every numeric metric as a scalar summary.

Events go to ``<root_dir>/tensorboard``, one tag per key (``train/...``,
``loss/...``, ``diagnostics/...``, ``eval/...``; TensorBoard groups them by prefix), at step
``env_steps`` so runs with different batch sizes line up. ``iteration``,
``env_steps`` and ``wall_time`` index the rows and are not written; the
event files keep their own wall time. The event file is created at the
first row, never before: a run refused before it starts leaves none behind.

A row is one event record, built here with the ``tensorboard`` package's
protocol buffers and appended by TensorFlow's record writer (event files
are TFRecord files): no TensorFlow op runs per scalar, and nothing runs
between rows. ``tf.summary.scalar`` ran one eager op per scalar on the
training thread (15% of a SAC run whose rows come every few iterations,
``benchmarks/tracker_cost.py``); ``tensorboard``'s own event file writer
checksums records in Python, over a hundred times what a row costs here.
Each scalar is a ``simple_value``, which TensorBoard reads as a scalar
summary; the float32 tensors ``tf.summary.scalar`` records, with the
scalars plugin's metadata, cost eight times as much to build
(docs/performance.md).
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any, Mapping, Optional

import attrs
import tensorflow as tf
from tensorboard.compat.proto.event_pb2 import Event
from tensorboard.compat.proto.summary_pb2 import Summary

from rlengine import SummaryWriter
from rlengine_writers.values import INDEX_KEYS, to_number


@attrs.define
class TensorBoardConfig:
    """Options of the ``tensorboard`` writer (TOML section ``[tensorboard]``)."""

    # Longest time, in seconds, events wait in memory before going to disk.
    flush_secs: int = attrs.field(
        default=10, validator=[attrs.validators.instance_of(int), attrs.validators.gt(0)]
    )


class TensorBoardWriter(SummaryWriter):
    """Writes scalar summaries readable by TensorBoard."""

    config_class = TensorBoardConfig

    def __init__(self, root_dir: str, config: TensorBoardConfig, total_env_steps: int = 0):
        super().__init__(root_dir, config, total_env_steps)
        self.logdir = os.path.join(root_dir, "tensorboard")
        self._writer: Optional[Any] = None  # a tf.io.TFRecordWriter, created by the first row
        self._flushed = 0.0  # monotonic time of the last flush
        self._closed = False

    def _open(self) -> Any:
        os.makedirs(self.logdir, exist_ok=True)
        name = f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}.{os.getpid()}.{id(self)}.v2"
        self._writer = tf.io.TFRecordWriter(os.path.join(self.logdir, name))
        self._writer.write(Event(wall_time=time.time(), file_version="brain.Event:2").SerializeToString())
        self._flushed = time.monotonic()
        return self._writer

    def write(self, metrics: Mapping[str, Any]) -> None:
        if self._closed:
            raise ValueError(f"write() on a closed tensorboard writer ({self.logdir})")
        writer = self._writer or self._open()
        values = []
        for key, value in metrics.items():
            number = None if key in INDEX_KEYS else to_number(value)
            if number is not None:  # strings and non-scalars have no scalar plot
                values.append(Summary.Value(tag=key, simple_value=float(number)))
        event = Event(wall_time=time.time(), step=int(to_number(metrics["env_steps"])), summary=Summary(value=values))
        writer.write(event.SerializeToString())
        if time.monotonic() - self._flushed > self.config.flush_secs:
            self.flush()

    def flush(self) -> None:
        if self._writer is not None:
            self._writer.flush()
            self._flushed = time.monotonic()

    def close(self) -> None:
        self._closed = True
        if self._writer is not None:
            self._writer.close()
            self._writer = None
