"""The ``tensorboard`` writer: every numeric metric as a scalar summary.

Events go to ``<root_dir>/tensorboard``, one tag per key (``train/...``,
``loss/...``, ``eval/...``; TensorBoard groups them by prefix), at step
``env_steps`` so runs with different batch sizes line up. ``iteration``,
``env_steps`` and ``wall_time`` index the rows and are not written; the
event files keep their own wall time. The event file is created at the
first row, never before: a run refused before it starts leaves none behind.
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Optional

import attrs
import tensorflow as tf

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
        self._writer: Optional[Any] = None  # created by the first row
        self._closed = False

    def _open(self) -> Any:
        self._writer = tf.summary.create_file_writer(self.logdir, flush_millis=self.config.flush_secs * 1000)
        return self._writer

    def write(self, metrics: Mapping[str, Any]) -> None:
        if self._closed:
            raise ValueError(f"write() on a closed tensorboard writer ({self.logdir})")
        step = int(to_number(metrics["env_steps"]))
        with (self._writer or self._open()).as_default():
            for key, value in metrics.items():
                number = None if key in INDEX_KEYS else to_number(value)
                # Strings and non-scalars have no scalar plot; skip them.
                if number is not None:
                    tf.summary.scalar(key, float(number), step=step)

    def flush(self) -> None:
        if self._writer is not None:
            self._writer.flush()

    def close(self) -> None:
        self._closed = True
        if self._writer is not None:
            self._writer.close()
            self._writer = None
