"""The ``mlflow`` writer: a run's config, metrics and artifacts in an MLflow tracking store.

Needs ``pip install "rlengine-writers[mlflow]"`` (``mlflow-skinny`` and the
SQL store's libraries). At the first row it makes an MLflow run (or, for a
resumed rlengine run, continues the one ``<root_dir>/mlflow_run.json``
names), logs the effective config as params (``section.key``) and
``config.toml`` as an artifact. The numeric metrics go to that run at step
``env_steps``, as the ``tensorboard`` writer does, each at most once per
``interval_secs``. A sender thread does all of it
(:mod:`rlengine_writers.tracker_writer`): it opens the run and logs the
queued rows in batches of up to 1000 metrics, as a synchronous call per row
costs milliseconds (see docs/trackers.md). The ``mlflow-policy`` callback
logs the exported greedy policy when training ends.

Rows a killed run logged past its newest checkpoint stay in MLflow (it has no
way to delete metric values): the resumed run logs those steps again, so
such steps hold two values.
"""

from __future__ import annotations

import os
from typing import Optional

import attrs

from rlengine_writers.mlflow_run import MlflowRun, status_of
from rlengine_writers.services import check_mlflow_uri
from rlengine_writers.tracker_writer import CLOSE_SECS, TrackerWriter
from rlengine_writers.tracking import non_negative_number, positive_number, require_modules


@attrs.define
class MlflowConfig:
    """Options of the ``mlflow`` writer (TOML section ``[mlflow]``)."""

    # tracking store; "": MLFLOW_TRACKING_URI, else MLflow's default (sqlite:///mlflow.db in the working directory)
    tracking_uri: str = ""
    # experiment of new MLflow runs (made if missing); "": MLFLOW_EXPERIMENT_NAME, else MLflow's "Default"
    experiment_name: str = ""
    run_name: str = ""  # name of a new MLflow run; "": the run directory's name
    # least time, in seconds, between two logged values of a metric: the newest is logged, at its env step
    # (evaluations always); 0: every row. Only thins what this tracker gets: metrics.jsonl keeps every row
    interval_secs: float = attrs.field(default=1.0, validator=non_negative_number)
    # longest time, in seconds, rows wait in memory before a background thread sends them as one batch
    flush_secs: float = attrs.field(default=5.0, validator=positive_number)
    # longest time, in seconds, closing the writer waits for the last rows and the end of the tracker run
    # (none after a second Ctrl-C); what is not sent by then is dropped, with one line saying how much
    close_secs: float = attrs.field(default=CLOSE_SECS, validator=positive_number)


def check_mlflow_installed() -> None:
    """One line naming the extra to install when MLflow (or the SQL library of its default store) is missing."""
    require_modules("mlflow", "MLflow", ("mlflow", "sqlalchemy"))


class MlflowWriter(TrackerWriter):
    """Logs every row to an MLflow run at step ``env_steps``, from a sender thread."""

    config_class = MlflowConfig
    tracker = "mlflow"

    def __init__(self, root_dir: str, config: MlflowConfig, total_env_steps: int = 0):
        super().__init__(root_dir, config, total_env_steps)
        check_mlflow_installed()  # a missing package refuses the run now, before anything is written
        check_mlflow_uri(config.tracking_uri)  # and so do an unknown scheme and a server that does not answer
        self.run: Optional[MlflowRun] = None  # made by the first row, opened by the sender thread

    def destination(self) -> str:
        return self.config.tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or "MLflow's default store"

    def started(self) -> None:
        self.run = MlflowRun(self.root_dir, self.config)  # found by the mlflow-policy callback from now on

    def send(self, rows: list) -> None:
        self.run.log_rows(rows)  # opens the MLflow run first

    def end(self, error: Optional[BaseException]) -> None:
        if self.run is not None:
            self.run.status = status_of(error)
            self.run.end()
