"""Collection pieces every pipeline shares: the one unroll loop, the two halves of a step
(observe, act) and the greedy step, a Python environment called from a graph, the observation
transformer chain, the fault-guarded environment, distribution converters. Public for pipeline
plugins."""

from rlengine.quiet_tensorflow import import_tensorflow

import_tensorflow()
