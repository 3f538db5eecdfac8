"""The core's built-in plugins (listed in :mod:`rlengine.plugin.core_plugins`): the ``sync`` and
``async`` pipelines, the ``train`` and ``plugins`` commands, the distribution converters."""
