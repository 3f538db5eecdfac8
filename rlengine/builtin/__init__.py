"""The core's built-in plugins (listed in :mod:`rlengine.plugin.builtin`): the ``sync`` and
``async`` pipelines, the ``train`` and ``plugins`` commands, the distribution converters."""
