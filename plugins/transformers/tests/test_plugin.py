import importlib
from importlib import metadata

from rlengine_transformers import plugin

import rlengine


def test_registers_every_transformer():
    registered = {}
    plugin.rlengine_register_transformers(register=lambda name, cls: registered.setdefault(name, cls))
    assert sorted(registered) == ["frame_stack", "image_scale", "normalize"]
    for reference in registered.values():  # "module:Class", imported on first use only
        module, _, name = reference.partition(":")
        cls = getattr(importlib.import_module(module), name)
        assert issubclass(cls, rlengine.ObservationTransformer)
        cls.config_class()  # every option has a default


def test_hook_is_marked_and_entry_point_declared():
    assert hasattr(plugin.rlengine_register_transformers, "rlengine_impl")
    points = metadata.entry_points(group="rlengine")
    assert any(p.name == "transformers" and p.value == "rlengine_transformers.plugin" for p in points)
