"""The ObservationTransformer interface.

Transformers compose in the configured order; the core calls them so::

    spec = t.output_spec                                   # after t, per copy
    state = t.initial_state(batch_size)
    observation, state = t.transform(observation, step_type, state)   # pure
    t.update(raw_observation)          # only on collected data, never on eval
    t.merge_updates(before, after)     # a copy elsewhere updated: fold its change in (remote collection)

``transform`` must be pure (the core also calls it on zeros to prepare
specs); statistics change only in ``update``. Any ``tf.Variable`` a
transformer owns is checkpointed with the run.
"""

from __future__ import annotations

from typing import Any, ClassVar

import tensorflow as tf

from rlengine.api.algorithm import untracked
from rlengine.api.data import Nest, zeros_from_spec
from rlengine.api.noconfig import NoConfig


class ObservationTransformer(tf.Module):
    """Base class of every observation-transformer plugin.

    ``super().__init__`` keeps ``self.input_spec`` (the observation spec it
    transforms, untracked by ``tf.Module``) and ``self.config`` (the
    instance of ``config_class`` from its section).
    """

    config_class: ClassVar[type] = NoConfig

    def __init__(self, observation_spec: Nest, config: Any):
        super().__init__(name=type(self).__name__)
        untracked(self, "input_spec", observation_spec)
        self.config = config

    @property
    def output_spec(self) -> Nest:
        """Spec of the transformed observation; default: unchanged."""
        return self.input_spec

    @property
    def state_spec(self) -> Nest:
        """Spec of per-copy state carried between steps (frame stacks); default none."""
        return ()

    def initial_state(self, batch_size: int) -> Nest:
        return zeros_from_spec(self.state_spec, [batch_size])

    def transform(self, observation: Nest, step_type: Any, state: Nest) -> tuple[Nest, Nest]:
        """Return ``(transformed_observation, next_state)``. Must be pure."""
        raise NotImplementedError

    def update(self, observation: Nest) -> None:
        """Update statistics from a batch of collected (untransformed) observations."""
        return None  # autograph cannot convert a body that is only a docstring

    def merge_updates(self, before: list, after: list) -> None:
        """Fold in the updates a copy of this transformer made in another process (a remote env runner).

        Called by pipelines that collect elsewhere, once per unroll received:
        ``before`` and ``after`` are that copy's variable values (numpy
        arrays, in ``self.variables`` order) when its unroll began and when it
        ended. The default treats every variable as an additive statistic (a
        sum, a count) and adds ``after - before``; a transformer whose
        statistics do not add (running moments) overrides it.
        """
        for variable, old, new in zip(self.variables, before, after):
            variable.assign_add(new - old)
