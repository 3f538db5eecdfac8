"""The core's own commands: ``train`` and ``plugins`` (registered by :mod:`rlengine.builtin.commands`)."""
