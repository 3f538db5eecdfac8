"""The ``sync`` pipeline: collect one unroll, then train, in turn."""

from rlengine.quiet_tensorflow import import_tensorflow

import_tensorflow()
