"""The four kinds of plugin: algorithms, environments, observation transformers, writers."""

from rlengine.interfaces.algorithm import Algorithm
from rlengine.interfaces.environment import Environment
from rlengine.interfaces.transformer import ObservationTransformer
from rlengine.interfaces.writer import SummaryWriter

__all__ = ["Algorithm", "Environment", "ObservationTransformer", "SummaryWriter"]
