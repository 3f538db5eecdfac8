"""The ``mlflow-policy`` callback: when training ends, the exported greedy policy goes to the run's MLflow run.

A writer sees rows, not the run, so this part of the MLflow integration is a
callback: it does nothing unless ``train.writers`` has ``mlflow``. When the
run finished (its budget, its target, or a hook's stop request) it exports
the newest checkpoint with ``rlengine-tools`` (the SavedModel of ``rlengine
export``) into a temporary directory and logs it as the artifact directory
``artifact_path``; without ``rlengine-tools`` it logs nothing and says so
once. A run that failed or was interrupted exports nothing (the writer marks
its MLflow run ``FAILED`` or ``KILLED``). Switch the export off alone with
``train.disabled_callbacks = ["mlflow-policy"]``.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any, Optional

import attrs

from rlengine import RLEngineError, hookimpl
from rlengine.errors import one_line
from rlengine_writers.background import finished_within
from rlengine_writers.mlflow_run import open_run_of
from rlengine_writers.tracking import warn

_said_no_tools = False  # the missing rlengine-tools is said once per process


@attrs.define
class MlflowPolicyConfig:
    """Options of the ``mlflow-policy`` callback (TOML section ``[mlflow-policy]``)."""

    artifact_path: str = "policy"  # artifact directory of the exported policy in the MLflow run


class MlflowPolicy:
    """Logs the exported policy to the MLflow run of a run that finished."""

    config_class = MlflowPolicyConfig

    def __init__(self, config: MlflowPolicyConfig):
        self.config = config

    @hookimpl
    def rlengine_train_end(self, run: Any, error: Optional[BaseException]) -> None:
        mlflow_run = open_run_of(run.root_dir) if "mlflow" in run.config.train.writers else None
        # None: no mlflow writer, or it never wrote a row; an MLflow run that could not be opened, the writer reports
        if mlflow_run is not None and error is None and mlflow_run.open_error is None:
            self._log_policy(run.root_dir, mlflow_run)

    def _log_policy(self, root_dir: str, mlflow_run: Any) -> None:
        global _said_no_tools
        try:
            from rlengine_tools.export import export_run
        except ImportError:
            if not _said_no_tools:
                _said_no_tools = True
                warn("mlflow", "the policy is not logged as an artifact: exporting it needs rlengine-tools "
                               "(pip install rlengine-tools), or switch this off with "
                               "--set 'train.disabled_callbacks=[\"mlflow-policy\"]'")
            return
        with tempfile.TemporaryDirectory(prefix="rlengine-mlflow-policy-") as tmp:
            out_dir = os.path.join(tmp, "policy")
            try:
                export_run(root_dir, out_dir)
            except RLEngineError as exc:  # e.g. a plugin of the run that only this process registered
                warn("mlflow", f"the policy is not logged as an artifact: the export failed: {one_line(exc)}")
                return
            self._upload(mlflow_run, out_dir)

    def _upload(self, mlflow_run: Any, out_dir: str) -> None:
        """Log the exported policy, within the writer's ``close_secs``; one line when it cannot be."""
        bound = mlflow_run.config.close_secs
        try:
            done = finished_within(lambda: mlflow_run.log_artifacts(out_dir, self.config.artifact_path), bound,
                                   "rlengine mlflow policy upload")
        except Exception as exc:
            warn("mlflow", f"the policy is not logged as an artifact: {type(exc).__name__}: {one_line(exc)}")
            return
        if not done:
            warn("mlflow", f"the policy is not logged as an artifact: {mlflow_run.tracking_uri} did not take it "
                           f"within mlflow.close_secs = {bound:g} s")
