"""The built-in pipelines, each registered through ``rlengine_register_pipelines``:
``sync`` (:mod:`.sync`) and ``async`` (:mod:`.threaded`)."""

from rlengine.quiet_tensorflow import import_tensorflow

import_tensorflow()
