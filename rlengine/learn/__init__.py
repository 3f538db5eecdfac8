"""Learning pieces every pipeline shares: the learner (on-policy and from replay), the replay
buffer and its sum tree, n-step returns, the update schedule. Public for pipeline plugins."""

from rlengine.quiet_tensorflow import import_tensorflow

import_tensorflow()
