"""The SummaryWriter interface.

The trainer writes a flat dict of scalars per summary::

    writer = WriterCls(root_dir, config, total_env_steps=100_000)
    writer.write({"iteration": 3, "env_steps": 768, "wall_time": 1.2,
                  "train/episode_return": 21.0, "loss/policy": 0.1})
    writer.flush()
    writer.close()

Keys are namespaced (``train/``, ``eval/``, ``loss/``, ``diagnostics/``, ``time/``, ...);
``iteration``, ``env_steps`` and ``wall_time`` are always present. ``wall_time`` is
the seconds since this process began building the run (evaluations, checkpoints
and summaries included); a resumed run's process starts it at 0 again, so a run's
total over its resumes is the sum of each process's last value (``rlengine runs``
and ``plot`` add them up: a ``wall_time`` lower than the row before starts a new
process).

Writers are built before the run is known to start (its checkpoint may not
fit, a plugin may refuse it): create files at the first ``write()`` (or in
``resume_from()``), never in ``__init__``.
"""

from __future__ import annotations

from typing import Any, ClassVar, Mapping

from rlengine.api.noconfig import NoConfig


class SummaryWriter:
    """Base class of every summary-writer plugin.

    ``super().__init__`` keeps ``self.root_dir`` (the run directory),
    ``self.config`` (the instance of ``config_class`` from its section) and
    ``self.total_env_steps`` (the run's env-step budget; 0 when unknown).
    """

    config_class: ClassVar[type] = NoConfig

    def __init__(self, root_dir: str, config: Any, total_env_steps: int = 0):
        self.root_dir = root_dir
        self.config = config
        #: The run's env-step budget (for progress and ETA); 0 when unknown.
        self.total_env_steps = total_env_steps

    def write(self, metrics: Mapping[str, float]) -> None:
        """Record one row of scalars."""
        raise NotImplementedError

    def resume_from(self, env_steps: int) -> None:
        """A resumed run continues at ``env_steps``: forget rows written after it.

        Called once, before the first ``write`` of every run (``env_steps`` is
        0 for a run that starts from scratch): a killed run may have written
        rows past its newest checkpoint, and those steps are about to be run
        again. Default: nothing.
        """

    def flush(self) -> None:
        """Push buffered rows to their destination."""

    def close(self) -> None:
        """Flush and release resources. Safe to call twice."""
        self.flush()
