"""The plugin host: hook specs, the per-run plugin manager, the registries of every plugin kind."""
