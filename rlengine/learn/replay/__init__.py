"""Replay for off-policy algorithms: the buffer (``buffer``), its per-copy rings (``rings``),
frame-stacked rows kept as single frames (``frames``), its checkpointed view (``checkpoint``) and
the sum tree of prioritized replay (``sumtree``).

The buffer's names are importable from here, as they were from the single module this package
replaced: ``from rlengine.learn.replay import ReplayBuffer``."""

from rlengine.learn.replay.buffer import PRIORITY_EPS, ReplayBuffer, Sample, kept_in_replay, rows_to_store

__all__ = ["PRIORITY_EPS", "ReplayBuffer", "Sample", "kept_in_replay", "rows_to_store"]
