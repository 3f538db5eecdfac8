"""The ``mlflow`` writer and the ``mlflow-policy`` callback, against a real MLflow SQLite store in a temp dir."""

import json
import os
import sys

import pytest

mlflow = pytest.importorskip("mlflow")
pytest.importorskip("sqlalchemy")

import rlengine_writers.plugin  # noqa: E402
from rlengine_writers.mlflow_run import RUN_FILE  # noqa: E402
from rlengine_writers.tracking import flat_params, run_config  # noqa: E402

import rlengine  # noqa: E402
from rlengine.plugin.manager import build_plugins  # noqa: E402
from rlengine.testing import MemoryWriter, testing_plugin, tiny_config  # noqa: E402
from rlengine.testing.failing import FailAt  # noqa: E402


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """One SQLite store for the module (making its tables takes MLflow a second or two), with the experiment
    of the tests; its artifacts go beside the store, not to MLflow's default ./mlruns of the working directory."""
    directory = tmp_path_factory.mktemp("mlflow")
    uri = f"sqlite:///{directory / 'mlflow.db'}"
    mlflow.MlflowClient(uri).create_experiment("tests", artifact_location=str(directory / "artifacts"))
    return uri


@pytest.fixture(autouse=True)
def _quiet_mlflow(monkeypatch, tmp_path):
    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")  # no usage reports from tests
    monkeypatch.chdir(tmp_path)  # whatever MLflow writes by default (mlflow.db, mlruns/) stays out of the checkout
    for name in ("MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_NAME"):
        monkeypatch.delenv(name, raising=False)


def _raw(root, store=None, **train):
    raw = tiny_config(str(root), writers=["memory", "mlflow"], **train)
    raw["mlflow"] = {"experiment_name": "tests", "flush_secs": 0.2, "interval_secs": 0,  # every row
                     **({"tracking_uri": store} if store else {})}
    return raw


def _engine(raw, *extra):
    plugins = build_plugins(load_entry_points=False, extra_plugins=[
        ("testing", testing_plugin()), ("writers", rlengine_writers.plugin), *extra])
    return rlengine.Engine(raw, plugins=plugins)


def _run_of(root, store):
    with open(os.path.join(root, RUN_FILE)) as f:
        record = json.load(f)
    client = mlflow.MlflowClient(store)
    return client, client.get_run(record["run_id"])


def _history(client, run, key):
    return [(m.step, m.value) for m in client.get_metric_history(run.info.run_id, key)]


def test_params_metrics_at_env_steps_and_the_config_artifact(tmp_path, store):
    root = tmp_path / "ppo-run-1"
    _engine(_raw(root, store, disabled_callbacks=["mlflow-policy"])).train()
    rows = MemoryWriter.last.rows

    client, run = _run_of(root, store)
    assert run.info.status == "FINISHED" and run.info.run_name == "ppo-run-1"
    assert run.data.tags["rlengine.root_dir"] == str(root) and run.data.tags["rlengine.algorithm"] == "toy"
    assert run.data.params == flat_params(run_config(str(root)))  # the effective config, section.key
    assert run.data.params["train.writers"] == '["memory", "mlflow"]'
    training = [(r["env_steps"], r["loss/total"]) for r in rows if "loss/total" in r]
    assert [(step, pytest.approx(value)) for step, value in training] == _history(client, run, "loss/total")
    evaluations = [(r["env_steps"], r["eval/average_return"]) for r in rows if "eval/average_return" in r]
    assert _history(client, run, "eval/average_return") == evaluations and len(evaluations) == 2
    assert "env_steps" not in run.data.metrics and "iteration" not in run.data.metrics  # they index the rows
    logged = mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path="config.toml",
                                                 dst_path=str(tmp_path / "download"), tracking_uri=store)
    with open(logged) as f:
        assert f.read() == (root / "config.toml").read_text()


def test_a_resumed_run_continues_its_mlflow_run_whose_status_follows_each_end(tmp_path, store):
    root = tmp_path / "run"
    with pytest.raises(rlengine.PluginError, match="stop at iteration 2"):
        _engine(_raw(root, store), ("fail", FailAt(2))).train()
    client, run = _run_of(root, store)
    assert run.info.status == "FAILED"  # closed while the run's error propagated
    assert [step for step, _ in _history(client, run, "loss/total")] == [8, 16]

    _engine(_raw(root, store)).train()  # the same config: resumes from the checkpoint of iteration 2
    client, resumed = _run_of(root, store)
    assert resumed.info.run_id == run.info.run_id and resumed.info.status == "FINISHED"
    assert [step for step, _ in _history(client, resumed, "loss/total")] == [8, 16, 24, 32]
    assert len(client.search_runs([run.info.experiment_id], f"attributes.run_name = '{run.info.run_name}'")) == 1


def test_a_resumed_run_whose_tracking_uri_changed_is_refused_with_one_line(tmp_path, store, monkeypatch):
    root = tmp_path / "run"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store)
    with pytest.raises(rlengine.PluginError, match="stop at iteration 1"):  # checkpointed, to be resumed
        _engine(_raw(root, num_env_steps=16, disabled_callbacks=["mlflow-policy"]), ("fail", FailAt(1))).train()
    assert _run_of(root, store)[1].info.status == "FAILED"  # the writer saw the run's error as it closed
    other = f"sqlite:///{tmp_path / 'other.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", other)
    with pytest.raises(rlengine.RLEngineError) as caught:
        _engine(_raw(root, num_env_steps=16, disabled_callbacks=["mlflow-policy"])).train()
    assert str(caught.value) == (
        f"the MLflow run of {str(root)!r} was logged to {store!r}, but this run would log to {other!r}: set "
        f"mlflow.tracking_uri = \"{store}\", or delete {str(root / RUN_FILE)!r} to start a new MLflow run")


@pytest.fixture
def kit_installed(tmp_path, monkeypatch):
    """The testing kit as an installed plugin (an entry point on sys.path), as ``rlengine export`` needs it."""
    site = tmp_path / "site"
    (site / "kit_entry_point.py").parent.mkdir()
    (site / "kit_entry_point.py").write_text("from rlengine.testing import testing_plugin\n\nplugin = testing_plugin()\n")
    dist = site / "rlengine_test_kit-0.0.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: rlengine-test-kit\nVersion: 0.0.0\n")
    (dist / "entry_points.txt").write_text("[rlengine]\ntest-kit = kit_entry_point:plugin\n")
    monkeypatch.syspath_prepend(str(site))
    yield
    sys.modules.pop("kit_entry_point", None)


def test_a_finished_run_logs_its_exported_policy(tmp_path, store, kit_installed):
    pytest.importorskip("rlengine_tools")
    root = tmp_path / "run"
    rlengine.Engine(_raw(root, store, num_env_steps=16, eval_interval=0)).train()  # plugins from entry points

    client, run = _run_of(root, store)
    listed = sorted(a.path for a in client.list_artifacts(run.info.run_id, "policy"))
    assert {"policy/saved_model.pb", "policy/signature.json", "policy/variables"} <= set(listed)
    signature = mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path="policy/signature.json",
                                                    dst_path=str(tmp_path / "download"), tracking_uri=store)
    with open(signature) as f:
        assert json.load(f)["algorithm"] == "toy"
    assert run.info.status == "FINISHED"


def test_a_store_the_sender_thread_cannot_open_stops_the_run_with_one_line(tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    store = f"file://{tmp_path / 'mlruns'}"  # MLflow 3 refuses its old file store
    with pytest.raises(rlengine.RLEngineError) as caught:
        _engine(_raw(tmp_path / "run", store, disabled_callbacks=["mlflow-policy"])).train()
    message = str(caught.value)
    assert message.startswith(f"the mlflow writer cannot log to {store}: MlflowException: The filesystem tracking "
                              "backend") and message.endswith("(check mlflow.tracking_uri or MLFLOW_TRACKING_URI)")
    assert "\n" not in message


def test_an_interrupted_run_is_killed_and_a_failed_one_failed():
    from rlengine_writers.mlflow_run import status_of

    assert status_of(None) == "FINISHED"
    assert status_of(rlengine.TrainingInterrupted(15, "runs/x", "runs/x/checkpoints/ckpt-2")) == "KILLED"  # SIGTERM
    assert status_of(KeyboardInterrupt()) == "KILLED"  # a second Ctrl-C
    assert status_of(RuntimeError("boom")) == "FAILED"


@pytest.mark.thorough  # two runs, or MLflow's store made afresh: tox -e writers runs it
def test_a_run_resumed_with_another_config_keeps_the_first_params_with_one_warning(tmp_path, store, capsys):
    root = tmp_path / "run"
    with pytest.raises(rlengine.PluginError, match="stop at iteration 1"):  # checkpointed, to be resumed
        _engine(_raw(root, store, num_env_steps=16, disabled_callbacks=["mlflow-policy"]), ("fail", FailAt(1))).train()
    capsys.readouterr()
    raw = _raw(root, store, num_env_steps=16, disabled_callbacks=["mlflow-policy"], eval_interval=1)
    plugins = build_plugins(load_entry_points=False, extra_plugins=[
        ("testing", testing_plugin()), ("writers", rlengine_writers.plugin)])
    rlengine.Engine(raw, plugins=plugins, force=True).train()

    client, run = _run_of(root, store)
    lines = [line for line in capsys.readouterr().err.splitlines() if "keeps the first values" in line]
    assert lines == [f"rlengine: warning: mlflow: MLflow run {run.info.run_id} keeps the first values of params "
                     "changed since (train.eval_interval); config.toml in its artifacts is the new config"]
    assert run.data.params["train.eval_interval"] == "2"  # tiny_config's, logged first
    logged = mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path="config.toml",
                                                 dst_path=str(tmp_path / "download"), tracking_uri=store)
    with open(logged) as f:
        assert "eval_interval = 1" in f.read()


def test_without_rlengine_tools_the_policy_is_not_logged_and_that_is_said_once(monkeypatch, capsys):
    from rlengine_writers import mlflow_policy

    monkeypatch.setitem(sys.modules, "rlengine_tools.export", None)  # as if rlengine-tools were not installed
    monkeypatch.setattr(mlflow_policy, "_said_no_tools", False)
    callback = mlflow_policy.MlflowPolicy(mlflow_policy.MlflowPolicyConfig())
    callback._log_policy("runs/x", mlflow_run=None)
    callback._log_policy("runs/y", mlflow_run=None)

    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "the policy is not logged as an artifact: exporting it needs rlengine-tools" in lines[0]


@pytest.mark.thorough  # two runs, or MLflow's store made afresh: tox -e writers runs it
def test_without_a_tracking_uri_the_run_lands_in_mlflow_db_of_the_working_directory(tmp_path):
    root = tmp_path / "run"  # the working directory is tmp_path (_quiet_mlflow), MLFLOW_TRACKING_URI unset
    raw = _raw(root, num_env_steps=8, disabled_callbacks=["mlflow-policy"])
    raw["mlflow"].pop("experiment_name")
    _engine(raw).train()

    client, run = _run_of(root, f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert run.info.status == "FINISHED" and run.data.tags["rlengine.root_dir"] == str(root)
