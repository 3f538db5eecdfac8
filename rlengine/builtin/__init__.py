"""Built-in plugins of the core, loaded through the ``rlengine`` entry-point group."""
