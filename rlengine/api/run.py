"""What lifecycle hooks see of a run in progress: :class:`Run`."""

from __future__ import annotations

from typing import Any, Optional

import attrs

from rlengine.config.schema import RunConfig


@attrs.define
class Run:
    """A run in progress, as hooks see it.

    ``config`` is the effective :class:`rlengine.RunConfig`; ``root_dir``
    where logs and checkpoints go; ``iteration`` and ``env_steps`` count
    what is done so far (the trainer advances them). ``algorithm``,
    ``specs`` (:class:`~rlengine.api.specs.RunSpecs`), ``environments`` (the
    training environments) and ``pipeline`` are the run's own objects: read
    them, do not replace them.

    A hook may end the run early with :meth:`request_stop`: the run stops
    after the current iteration as if its budget were spent (a last
    checkpoint, ``rlengine_train_end`` with no error) and
    ``TrainResult.stop_reason`` says why.
    """

    config: RunConfig
    root_dir: str
    algorithm: Any
    specs: Any
    pipeline: Any
    iteration: int = 0
    env_steps: int = 0
    #: The engine's internals (plugins, components); not part of the plugin API.
    internals: Any = attrs.field(default=None, repr=False)
    _stop_reason: Optional[str] = attrs.field(default=None, init=False, repr=False)

    @property
    def environments(self) -> list:
        return self.pipeline.envs

    def request_stop(self, reason: str) -> None:
        """Ask the trainer to end the run after the current iteration; the first reason is kept.

        ``reason`` is one line saying who stopped the run and why (e.g. "pruned by
        the tuner at 5120 env steps"). Unlike SIGINT this is a normal finish, not
        an interruption: ``Engine.train()`` returns, and training into the same
        root dir again would continue from the last checkpoint towards the budget.
        """
        if not isinstance(reason, str) or not reason.strip():
            raise ValueError("Run.request_stop needs a reason: one line saying who stops the run and why")
        if self._stop_reason is None:
            self._stop_reason = reason.strip()

    @property
    def stop_reason(self) -> Optional[str]:
        """The reason given to :meth:`request_stop`, or None while nobody asked the run to stop."""
        return self._stop_reason
