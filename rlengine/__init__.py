"""rlengine: a plugin-based reinforcement-learning engine on TensorFlow 2.

Everything a plugin may import is listed in ``__all__`` (every name of :mod:`rlengine.api`, and
the engine's); other modules are private to the core, except :mod:`rlengine.errors`, the kits
pipeline authors build on (:mod:`rlengine.collect`, :mod:`rlengine.learn`), the test kit
(:mod:`rlengine.testing`) and :mod:`rlengine.lazy`; docs/plugins.md lists them all. Names load on
first use, so ``import rlengine`` (and ``rlengine --version``, ``--help``, ``plugins``) does not
import TensorFlow; the first name that needs it imports it, quietly.
"""

from __future__ import annotations

from rlengine.api import TENSORFLOW_FREE as _API_TENSORFLOW_FREE
from rlengine.api import WHERE as _API_WHERE
from rlengine.errors import __all__ as _ERRORS
from rlengine.lazy import install_moved_modules, lazy_facade
from rlengine.plugin.markers import API_VERSION as API_VERSION
from rlengine.plugin.markers import CORE_VERSION as __version__  # noqa: F401  (in __all__)
from rlengine.plugin.markers import hookimpl as hookimpl
from rlengine.quiet_tensorflow import import_tensorflow

#: Public name -> the module that defines it: the names of rlengine.api and rlengine.errors, and these.
_WHERE = {
    **_API_WHERE,
    **dict.fromkeys(_ERRORS, "rlengine.errors"),
    "RunConfig": "rlengine.config.schema",
    "TrainConfig": "rlengine.config.schema",
    "write_atomically": "rlengine.files",
    "SquashedNormal": "rlengine.builtin.tfp_distributions",
    "n_step_return": "rlengine.learn.returns",
    "Engine": "rlengine.run.engine",
    "TrainResult": "rlengine.run.trainer",
    "load": "rlengine.policy.load",
    "Policy": "rlengine.policy.saved",
    "PolicyState": "rlengine.policy.saved",
    "RemoteCollector": "rlengine.run.remote",
    "ActingWeights": "rlengine.run.remote",
}
_TENSORFLOW_FREE = {*_API_TENSORFLOW_FREE, "rlengine.config.schema", "rlengine.errors", "rlengine.files",
                    "rlengine.policy.load", "rlengine.policy.saved"}  # a cached policy loads without TensorFlow

__getattr__, __dir__, __all__ = lazy_facade(
    globals(), _WHERE, modules={"random": "rlengine.api.seeding"},  # the run's checkpointed random generator
    eager=("API_VERSION", "__version__", "hookimpl"), prepare=import_tensorflow, unprepared=_TENSORFLOW_FREE)

install_moved_modules()
