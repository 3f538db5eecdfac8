import importlib
from importlib import metadata

from rlengine_writers import plugin

import rlengine


def test_registers_every_writer():
    registered = {}
    plugin.rlengine_register_writers(register=lambda name, cls: registered.setdefault(name, cls))
    assert sorted(registered) == ["console", "jsonl", "mlflow", "tensorboard", "wandb"]
    for reference in registered.values():  # "module:Class", imported on first use only
        module, _, name = reference.partition(":")
        cls = getattr(importlib.import_module(module), name)
        assert issubclass(cls, rlengine.SummaryWriter)
        cls.config_class()  # every option has a default


def test_registers_the_mlflow_policy_callback():
    registered = {}
    plugin.rlengine_register_callbacks(register=lambda name, cls: registered.setdefault(name, cls))
    assert registered == {"mlflow-policy": "rlengine_writers.mlflow_policy:MlflowPolicy"}
    module, _, name = registered["mlflow-policy"].partition(":")
    cls = getattr(importlib.import_module(module), name)
    assert callable(cls.rlengine_train_end) and cls.config_class().artifact_path == "policy"


def test_hook_is_marked_and_entry_point_declared():
    assert hasattr(plugin.rlengine_register_writers, "rlengine_impl")
    assert hasattr(plugin.rlengine_register_callbacks, "rlengine_impl")
    points = metadata.entry_points(group="rlengine")
    assert any(p.name == "writers" and p.value == "rlengine_writers.plugin" for p in points)
