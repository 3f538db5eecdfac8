"""What lifecycle hooks see of a run in progress: :class:`Run`."""

from __future__ import annotations

from typing import Any

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

    @property
    def environments(self) -> list:
        return self.pipeline.envs
