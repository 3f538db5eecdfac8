"""The configured observation transformers, composed in order."""

from __future__ import annotations

from typing import Any, Sequence

import tensorflow as tf

from rlengine.api import ObservationTransformer
from rlengine.api.data import Nest, TimeStep


class TransformerChain(tf.Module):
    """Applies transformers in order; its state is the tuple of their states."""

    def __init__(self, transformers: Sequence[ObservationTransformer]):
        super().__init__(name="observation_transformers")
        self.transformers = list(transformers)

    @property
    def state_spec(self) -> tuple:
        return tuple(t.state_spec for t in self.transformers)

    def initial_state(self, batch_size: int) -> tuple:
        return tuple(t.initial_state(batch_size) for t in self.transformers)

    def transform(self, time_step: TimeStep, state: tuple, update: bool = False) -> tuple[TimeStep, tuple]:
        """Transform the observation of a time step.

        With ``update`` (collection only) each transformer first updates its
        statistics from the observation it is about to transform, i.e. as its
        predecessors output it; otherwise nothing changes (evaluation, specs).
        """
        observation = time_step.observation
        new_state = []
        for transformer, s in zip(self.transformers, state):
            if update:
                transformer.update(observation)
            observation, s = transformer.transform(observation, time_step.step_type, s)
            new_state.append(s)
        return time_step._replace(observation=observation), tuple(new_state)

    def statistics(self) -> list:
        """Each transformer's variable values (numpy, in its ``variables`` order): what remote copies sync."""
        return [[v.numpy() for v in t.variables] for t in self.transformers]

    def assign_statistics(self, values: list) -> None:
        """Set every transformer's variables to ``values`` (what :meth:`statistics` returned elsewhere)."""
        for transformer, arrays in zip(self.transformers, values):
            for variable, value in zip(transformer.variables, arrays):
                variable.assign(value)

    def merge_updates(self, before: list, after: list) -> None:
        """Fold a remote copy's updates in: its :meth:`statistics` when an unroll began and when it ended."""
        for transformer, old, new in zip(self.transformers, before, after):
            if old:  # a transformer without variables has nothing to merge
                transformer.merge_updates(old, new)

    @staticmethod
    def output_spec_of(transformers: Sequence[Any], observation_spec: Nest) -> Nest:
        spec = observation_spec
        for t in transformers:
            spec = t.output_spec
        return spec

