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


def test_each_tracker_is_an_extra_and_mlflows_is_its_client_alone():
    requires = metadata.requires("rlengine-writers") or []
    extra = {name: sorted(r.split(";")[0].strip() for r in requires if f'extra == "{name}"' in r)
             for name in ("mlflow", "wandb")}
    assert extra == {"mlflow": ["alembic>=1.12", "mlflow-skinny>=3.1", "sqlalchemy>=2.0"], "wandb": ["wandb>=0.20"]}
    assert not [r for r in requires if "extra ==" not in r and ("mlflow" in r or "wandb" in r)]  # nobody else pays
