"""The MLflow run an rlengine run logs to: made at its first row, continued when it resumes, ended on close.

``<root_dir>/mlflow_run.json`` records the MLflow run's id and tracking URI,
so a resumed rlengine run logs to the same MLflow run; a tracking URI that
changed in between is refused rather than silently starting another run.

Opening the store and the run is slow for MLflow (it checks the database
schema: docs/trackers.md), so the writer's sender thread opens it, before sending
the first rows; whoever needs it first (the thread, or the ``mlflow-policy``
callback) opens it, under a lock. :data:`OPEN_RUNS` lets that callback log the
exported policy to the same MLflow run.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any, Optional

from rlengine.errors import TrainingInterrupted, one_line
from rlengine_writers.tracking import (
    CONFIG_FILE,
    TrackerError,
    flat_params,
    read_json,
    run_config,
    safe_key,
    warn,
    write_json,
)

RUN_FILE = "mlflow_run.json"
#: MLflow takes at most this many metrics, and this many params, per log_batch call.
MAX_METRICS_PER_BATCH, MAX_PARAMS_PER_BATCH = 1000, 100
MAX_PARAM_LENGTH = 6000  # MLflow refuses longer param values; config.toml, logged whole, keeps them

#: Absolute root dir -> the MLflow run this process is logging it to.
OPEN_RUNS: dict[str, "MlflowRun"] = {}


class MlflowRun:
    """The MLflow run of one rlengine run, opened on first use through an ``MlflowClient``."""

    def __init__(self, root_dir: str, config: Any):
        self.root_dir, self.config = root_dir, config
        self.client: Optional[Any] = None
        self.run_id: Optional[str] = None
        self.tracking_uri = ""
        self.status = "FINISHED"  # how end() marks it (the writer sets FAILED or KILLED when the run failed)
        self.open_error: Optional[TrackerError] = None  # why it could not be opened, once it could not
        self._lock = threading.Lock()
        OPEN_RUNS[os.path.abspath(root_dir)] = self

    def ensure_open(self) -> None:
        """Continue the MLflow run ``root_dir`` records, or make one, and record the run's config in it.

        A failure is kept and raised again at once by later calls: trying again would wait on the
        same server (:data:`rlengine_writers.services.MLFLOW_HTTP_BOUNDS`) for nothing.
        """
        with self._lock:
            if self.open_error is not None:
                raise self.open_error
            if self.run_id is None:
                try:
                    self._open()
                except TrackerError as exc:
                    self.open_error = exc
                    raise

    def _open(self) -> None:
        import mlflow

        uri = self.config.tracking_uri or mlflow.get_tracking_uri()  # MLFLOW_TRACKING_URI, else MLflow's default
        record = read_json(os.path.join(self.root_dir, RUN_FILE))
        if record is not None:
            _check_same_store(record, uri, self.root_dir)  # before the client, which makes a missing store
        try:
            client = mlflow.MlflowClient(tracking_uri=uri)
            if record is not None:
                run_id = _continued(client, record, uri, self.root_dir)
            else:
                run_id = _made(client, uri, self.root_dir, self.config)
            self.client, self.run_id, self.tracking_uri = client, run_id, uri
            self.log_config(resumed=record is not None)
        except TrackerError:
            raise
        except Exception as exc:  # MlflowException, or the store's own (SQLAlchemy, OS) errors
            raise TrackerError(f"the mlflow writer cannot log to {uri}: {type(exc).__name__}: {one_line(exc)} "
                               "(check mlflow.tracking_uri or MLFLOW_TRACKING_URI)") from exc

    def log_config(self, resumed: bool) -> None:
        """The effective config as params (``section.key``) and ``config.toml`` as an artifact.

        MLflow cannot change a param once logged: a run resumed with another
        config (``--force``) keeps the first values, with one warning; its
        ``config.toml`` artifact is replaced by the new one.
        """
        from mlflow.entities import Param

        params = {key: value[:MAX_PARAM_LENGTH] for key, value in flat_params(run_config(self.root_dir)).items()}
        logged = self.client.get_run(self.run_id).data.params if resumed else {}
        changed = sorted(key for key in params if key in logged and logged[key] != params[key])
        if changed:
            warn("mlflow", f"MLflow run {self.run_id} keeps the first values of params changed since "
                           f"({', '.join(changed[:5])}); config.toml in its artifacts is the new config")
        new = [Param(key, value) for key, value in sorted(params.items()) if key not in logged]
        for start in range(0, len(new), MAX_PARAMS_PER_BATCH):
            self.client.log_batch(self.run_id, params=new[start:start + MAX_PARAMS_PER_BATCH])
        self.client.log_artifact(self.run_id, os.path.join(self.root_dir, CONFIG_FILE))

    def log_rows(self, rows: list) -> None:
        """Log ``(timestamp_ms, env_steps, {key: value})`` rows, batched; errors become one line."""
        from mlflow.entities import Metric

        self.ensure_open()
        metrics = [Metric(safe_key(key), value, timestamp, step)
                   for timestamp, step, values in rows for key, value in values.items()]
        try:
            for start in range(0, len(metrics), MAX_METRICS_PER_BATCH):
                self.client.log_batch(self.run_id, metrics=metrics[start:start + MAX_METRICS_PER_BATCH])
        except Exception as exc:
            raise TrackerError(f"the mlflow writer could not log to {self.tracking_uri}: "
                               f"{type(exc).__name__}: {one_line(exc)}") from exc

    def log_artifacts(self, directory: str, artifact_path: Optional[str]) -> None:
        self.ensure_open()
        self.client.log_artifacts(self.run_id, directory, artifact_path)

    def end(self) -> None:
        """Mark the MLflow run (if it was opened) ended with :attr:`status`, and forget it."""
        OPEN_RUNS.pop(os.path.abspath(self.root_dir), None)
        if self.run_id is not None:
            self.client.set_terminated(self.run_id, self.status, end_time=int(time.time() * 1000))


def status_of(error: Optional[BaseException]) -> str:
    """The MLflow status of a run that ended with ``error`` (None: it succeeded)."""
    if error is None:
        return "FINISHED"
    return "KILLED" if isinstance(error, (TrainingInterrupted, KeyboardInterrupt)) else "FAILED"


def open_run_of(root_dir: str) -> Optional[MlflowRun]:
    """The MLflow run this process logs ``root_dir`` to, if the ``mlflow`` writer has written a row."""
    return OPEN_RUNS.get(os.path.abspath(root_dir))


def _check_same_store(record: dict, uri: str, root_dir: str) -> None:
    """Refuse to continue a run's MLflow run in another store than the one it was logged to."""
    if record.get("tracking_uri") != uri:
        path = os.path.join(root_dir, RUN_FILE)
        raise TrackerError(f"the MLflow run of {root_dir!r} was logged to {record.get('tracking_uri')!r}, but this "
                           f"run would log to {uri!r}: set mlflow.tracking_uri = \"{record.get('tracking_uri')}\", "
                           f"or delete {path!r} to start a new MLflow run")


def _continued(client: Any, record: dict, uri: str, root_dir: str) -> str:
    """The recorded run's id, after checking the store has it; marked running again."""
    path = os.path.join(root_dir, RUN_FILE)
    run_id = str(record.get("run_id"))
    try:
        client.get_run(run_id)
    except Exception as exc:
        raise TrackerError(f"the MLflow run {run_id} recorded in {path!r} is not in {uri!r} ({one_line(exc)}): "
                           f"log to the store it is in, or delete {path!r} to start a new MLflow run") from None
    client.update_run(run_id, status="RUNNING")
    return run_id


def _made(client: Any, uri: str, root_dir: str, config: Any) -> str:
    """A new run's id, recorded in ``root_dir`` before anything is logged to it."""
    experiment_id = _experiment_id(client, config.experiment_name or os.environ.get("MLFLOW_EXPERIMENT_NAME")
                                   or "Default")
    train = run_config(root_dir).get("train", {})
    tags = {"rlengine.root_dir": os.path.abspath(root_dir), "rlengine.algorithm": str(train.get("algorithm")),
            "rlengine.env": str(train.get("env"))}
    name = config.run_name or os.path.basename(os.path.abspath(root_dir))
    run_id = client.create_run(experiment_id, run_name=name, tags=tags).info.run_id
    write_json(os.path.join(root_dir, RUN_FILE), {"run_id": run_id, "tracking_uri": uri,
                                                  "experiment_id": experiment_id})
    return run_id


def _experiment_id(client: Any, name: str) -> str:
    """The id of the experiment ``name``, made if it does not exist (another process may make it meanwhile)."""
    from mlflow.exceptions import MlflowException

    experiment = client.get_experiment_by_name(name)
    if experiment is None:
        try:
            return client.create_experiment(name)
        except MlflowException:
            experiment = client.get_experiment_by_name(name)  # made by a run starting at the same time
            if experiment is None:
                raise
    if experiment.lifecycle_stage == "deleted":
        raise TrackerError(f"the MLflow experiment {name!r} is deleted: restore it (mlflow experiments restore "
                           f"--experiment-id {experiment.experiment_id}) or set mlflow.experiment_name to another")
    return experiment.experiment_id
