"""Without MLflow or W&B installed, the plugin still loads and lists, and a run that asks for one fails in one line."""

import sys

import pytest
import rlengine_writers.plugin

import rlengine
from rlengine.plugin.manager import build_plugins
from rlengine.testing import testing_plugin, tiny_config


def _plugins():
    return build_plugins(load_entry_points=False, extra_plugins=[
        ("testing", testing_plugin()), ("writers", rlengine_writers.plugin)])


@pytest.mark.parametrize("writer, module, package", [("mlflow", "mlflow", "MLflow"),
                                                     ("mlflow", "sqlalchemy", "MLflow"),
                                                     ("wandb", "wandb", "Weights & Biases")])
def test_a_run_with_a_tracker_whose_package_is_missing_fails_in_one_line(tmp_path, monkeypatch, writer, module,
                                                                         package):
    monkeypatch.setitem(sys.modules, module, None)  # `import module` now fails as if it were not installed
    plugins = _plugins()
    assert plugins.registries.writers.get(writer).obj.__name__  # the writer's class loads without its package
    root = tmp_path / "run"
    engine = rlengine.Engine(tiny_config(str(root), writers=["memory", writer]), plugins=plugins)

    with pytest.raises(rlengine.RLEngineError) as caught:
        engine.train()
    assert str(caught.value) == (f'the {writer} writer needs {package}: pip install "rlengine-writers[{writer}]" '
                                 f"(no module named {module!r})")
    assert not root.exists()  # refused before the run started


def test_the_mlflow_policy_callback_loads_and_lists_without_mlflow(monkeypatch):
    monkeypatch.setitem(sys.modules, "mlflow", None)
    plugins = _plugins()
    assert plugins.registered_by("writers")["callbacks"] == ["mlflow-policy"]
    assert plugins.registries.callbacks.get("mlflow-policy").obj.__name__ == "MlflowPolicy"
