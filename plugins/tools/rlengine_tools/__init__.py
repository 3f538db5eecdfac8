"""Commands on the run directories ``rlengine train`` writes: ``eval``, ``play``, ``export``, ``plot``.

They are registered by :mod:`rlengine_tools.plugin` through the
``rlengine_register_commands`` hook. This package imports nothing heavy:
the CLI loads it on every call.
"""

__version__ = "0.1.0"
