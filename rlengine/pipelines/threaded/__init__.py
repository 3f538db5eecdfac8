"""The ``async`` pipeline: env threads and actor threads collect while the learner trains."""

from rlengine.quiet_tensorflow import import_tensorflow

import_tensorflow()
