"""When the trainer writes a checkpoint: every ``train.checkpoint_interval`` iterations, and by the clock.

By the clock (``train.checkpoint_seconds``), the first checkpoint comes
soon, :data:`FIRST_GAP_SECONDS` after the process's first iteration (whose
tracing may take long), and the gaps then double up to
``checkpoint_seconds``: a run killed early loses at most about half of what
it did, and a long one loses at most ``checkpoint_seconds``. A gap is never
shorter than :data:`COST_FACTOR` times what the last checkpoint took to
write, so a huge replay buffer cannot make the run spend more than a few
percent of its time saving. Any checkpoint (by iterations, by time, at a
stop) restarts the clock.
"""

from __future__ import annotations

import time
from typing import Callable, Optional

FIRST_GAP_SECONDS = 1.0  # cheap: a checkpoint of SAC with a 1M-row replay buffer takes a fraction of a second
COST_FACTOR = 20.0  # at most 1 / 20 of the run's time goes into checkpoints written by the clock


class CheckpointSchedule:
    """Says after which iterations to checkpoint; call :meth:`saved` after every checkpoint."""

    def __init__(self, interval: int, seconds: float, clock: Callable[[], float] = time.monotonic):
        self.interval, self.seconds, self.clock = interval, seconds, clock
        self.gap = min(FIRST_GAP_SECONDS, seconds)
        self.last: Optional[float] = None  # when the clock was (re)started; None before the first iteration

    def due(self, iteration: int) -> bool:
        """Whether to checkpoint now, at the end of ``iteration``."""
        if self.interval and iteration % self.interval == 0:
            return True
        if not self.seconds:
            return False
        if self.last is None:  # the first iteration of this process ends: the clock starts now
            self.last = self.clock()
            return False
        return self.clock() - self.last >= self.gap

    def saved(self, write_seconds: float) -> None:
        """A checkpoint was just written, in ``write_seconds``: restart the clock, widen the next gap."""
        if self.seconds:
            self.gap = min(self.seconds, max(2 * self.gap, COST_FACTOR * write_seconds))
            self.last = self.clock()
