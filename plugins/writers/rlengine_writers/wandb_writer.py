"""The ``wandb`` writer: a run's config and metrics in Weights & Biases (online, offline or disabled).

Needs ``pip install "rlengine-writers[wandb]"``. At the first row it starts a
W&B run with the effective config (the sections of ``config.toml``, shown as
``section.key``) and records the run's id in ``<root_dir>/wandb_run.json``,
so a resumed rlengine run continues the same W&B run (``resume="allow"``).
The numeric metrics are logged at step ``env_steps`` (each at most once per
``interval_secs``): an evaluation row joins the values logged at the same
step. W&B drops rows whose step is
below one it already has, so after a kill the steps between the checkpoint
and the kill keep the killed run's values.

A sender thread (:mod:`rlengine_writers.tracker_writer`) starts the W&B
run and logs the queued rows, so the training loop waits for neither
``wandb.init`` nor ``run.log`` (what they cost: docs/trackers.md).
"""

from __future__ import annotations

import os
import sys
from typing import Any, Optional

import attrs

from rlengine.errors import one_line
from rlengine_writers.services import check_wandb_online, wandb_server
from rlengine_writers.tracker_writer import CLOSE_SECS, TrackerWriter
from rlengine_writers.tracking import (
    TrackerError,
    non_negative_number,
    positive_number,
    read_json,
    require_modules,
    run_config,
    safe_key,
    write_json,
)

RUN_FILE = "wandb_run.json"
MODES = ("auto", "online", "offline", "disabled")


@attrs.define
class WandbConfig:
    """Options of the ``wandb`` writer (TOML section ``[wandb]``)."""

    project: str = ""  # W&B project; "": WANDB_PROJECT, else W&B's default ("uncategorized")
    entity: str = ""  # W&B user or team; "": WANDB_ENTITY, else your default entity
    # "online", "offline" (files only; `wandb sync` uploads them later), "disabled", or "auto": WANDB_MODE, else online
    mode: str = attrs.field(default="auto", validator=attrs.validators.in_(MODES))
    run_name: str = ""  # display name of a new W&B run; "": the run directory's name
    dir: str = ""  # where W&B keeps its files (a wandb/ folder inside); "": WANDB_DIR, else the run directory
    # least time, in seconds, between two logged values of a metric: the newest is logged, at its env step
    # (evaluations always); 0: every row. Only thins what this tracker gets: metrics.jsonl keeps every row
    interval_secs: float = attrs.field(default=1.0, validator=non_negative_number)
    # longest time, in seconds, rows wait in memory before a background thread hands them to W&B
    flush_secs: float = attrs.field(default=5.0, validator=positive_number)
    # longest time, in seconds, closing the writer waits for the last rows and the end of the tracker run
    # (none after a second Ctrl-C); what is not sent by then is dropped, with one line saying how much
    close_secs: float = attrs.field(default=CLOSE_SECS, validator=positive_number)


def _quiet_unless_asked() -> bool:
    """W&B's console output is replaced by one line of ours, unless the user set how much W&B says."""
    return not any(name in os.environ for name in ("WANDB_SILENT", "WANDB_QUIET"))


def check_wandb_installed() -> None:
    """One line naming the extra to install when W&B is missing."""
    require_modules("wandb", "Weights & Biases", ("wandb",))


class WandbWriter(TrackerWriter):
    """Logs every row to a W&B run at step ``env_steps``, from a sender thread."""

    config_class = WandbConfig
    tracker = "wandb"

    def __init__(self, root_dir: str, config: WandbConfig, total_env_steps: int = 0):
        super().__init__(root_dir, config, total_env_steps)
        check_wandb_installed()  # a missing package refuses the run now, before anything is written
        check_wandb_online(config.mode)  # and so do a missing API key and a server that does not answer
        self.run: Optional[Any] = None  # the W&B run, started by the sender thread
        self._record: Optional[dict] = None

    def destination(self) -> str:
        return wandb_server(self.config.mode) or "W&B's local files"

    def started(self) -> None:
        """Check, on the training thread, that a recorded W&B run can be continued as configured."""
        path = os.path.join(self.root_dir, RUN_FILE)
        self._record = read_json(path)
        project = self._record.get("project") if self._record else None
        if self._record is not None and self.config.project and project != self.config.project:
            raise TrackerError(f"the W&B run of {self.root_dir!r} is in project {project!r}, not "
                               f"{self.config.project!r}: set wandb.project = \"{project}\", or delete "
                               f"{path!r} to start a new W&B run")

    def send(self, rows: list) -> None:
        run = self.run or self._start()
        for _, step, values in rows:
            run.log({safe_key(key): value for key, value in values.items()}, step=step)

    def _start(self) -> Any:
        import wandb

        cfg, record = self.config, self._record
        try:
            self.run = wandb.init(
                project=cfg.project or None, entity=cfg.entity or None, mode=None if cfg.mode == "auto" else cfg.mode,
                name=cfg.run_name or os.path.basename(os.path.abspath(self.root_dir)),
                dir=cfg.dir or (None if os.environ.get("WANDB_DIR") else self.root_dir),
                id=str(record["run_id"]) if record is not None else None,  # None: W&B makes one
                resume="allow", config=run_config(self.root_dir),
                allow_val_change=True,  # a run resumed with another config (--force) records the new one
                reinit="create_new",  # other W&B runs of this process (a notebook's) go on
                settings=wandb.Settings(silent=True) if _quiet_unless_asked() else None)
        except Exception as exc:
            raise TrackerError(f"the wandb writer could not start a W&B run: {type(exc).__name__}: "
                               f"{one_line(exc)}") from exc
        if record is None:
            write_json(os.path.join(self.root_dir, RUN_FILE),
                       {"run_id": self.run.id, "project": self.run.project, "entity": self.run.entity})
        print(f"rlengine: wandb: {self._where()}", file=sys.stderr, flush=True)
        return self.run

    def _where(self) -> str:
        """Our one line about the W&B run, in place of W&B's own (its banner, history and summary)."""
        run = self.run
        if run.settings.mode == "disabled":
            return "disabled: nothing is recorded"
        if run.offline:
            files = os.path.dirname(run.dir)  # run.dir is <offline-run-...>/files
            return f"offline run {run.id} in {files}; upload it with: wandb sync {files}"
        return f"run {run.id} at {run.url}"

    def end(self, error: Optional[BaseException]) -> None:
        if self.run is not None:
            self.run.finish(exit_code=0 if error is None else 1)  # W&B shows a run that ended with an error failed
            self.run = None
