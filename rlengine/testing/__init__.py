"""The testing kit for rlengine and plugin authors (:mod:`.kit`), its plugins that fail on purpose
(:mod:`.failing`), and the async pipeline's echo plugin (:mod:`.echo`)."""

from rlengine.quiet_tensorflow import import_tensorflow

import_tensorflow()

from rlengine.testing.failing import *  # noqa: E402,F403
from rlengine.testing.graph_env_check import check_graph_environment  # noqa: E402,F401
from rlengine.testing.kit import *  # noqa: E402,F403
from rlengine.testing.kit import __doc__ as _kit_doc  # noqa: E402,F401
