"""The study a tune dir holds: Optuna's journal file, one ``tune`` process at a time, resumable.

Layout of a tune dir::

    study.log       the Optuna study (JournalStorage, one JSON line per change)
    tune.lock       held (flock) by the tune process using the dir
    trial-<n>/      the run directory of trial n (config.toml, metrics, checkpoints)
    best.toml       the full config of the best trial so far

A journal file rather than SQLite: every change is one appended, fsynced
line, so a tune killed at any point leaves at worst one half-written last
line (dropped on the next start, see :func:`repair_journal`), an append
that a full disk stops leaves nothing of itself (:mod:`rlengine_optuna.journal`),
there is no schema to migrate between Optuna versions, and no database
driver is involved. ``optuna-dashboard study.log`` reads it as it is.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from typing import Any, Iterator, Optional

import optuna
from optuna.storages.journal import JournalStorage
from optuna.trial import TrialState

from rlengine import RLEngineError
from rlengine_optuna.journal import JournalFile

STUDY_FILE = "study.log"
LOCK_FILE = "tune.lock"
STUDY_NAME = "rlengine-tune"
#: The study's user attribute recording what it searches (params, objective, base config).
FINGERPRINT = "rlengine_tune"
#: Trials that count towards ``--trials``: an interrupted or failed trial does not.
FINISHED = (TrialState.COMPLETE, TrialState.PRUNED)
FORCE_HINT = "use another --tune-dir, or --force to add this command's trials to that study"


class TuneDirError(RLEngineError):
    """A tune dir that cannot be used: another tune holds it, or its study searches something else."""


@contextlib.contextmanager
def locked(tune_dir: str) -> Iterator[None]:
    """Hold ``tune_dir`` for this process: a second ``tune`` on it is refused, not interleaved.

    The lock is an ``flock``, which the kernel drops when the process dies,
    so a killed tune never leaves the dir locked.
    """
    import fcntl

    check_usable(tune_dir)
    os.makedirs(tune_dir, exist_ok=True)
    path = os.path.join(tune_dir, LOCK_FILE)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 32).decode(errors="replace").strip() or "?"
        os.close(fd)
        raise TuneDirError(f"another rlengine tune (pid {holder}) is using {tune_dir!r}; wait for it to end, "
                           "or choose another --tune-dir") from None
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def check_usable(tune_dir: str) -> None:
    """Refuse a directory that holds files but no study: it is not a tune dir, and trials would mix in."""
    if os.path.isfile(tune_dir):
        raise TuneDirError(f"--tune-dir {tune_dir!r} is a file; pass a directory (new, or one tune wrote)")
    if not os.path.isdir(tune_dir) or os.path.exists(os.path.join(tune_dir, STUDY_FILE)):
        return
    others = sorted(set(os.listdir(tune_dir)) - {LOCK_FILE})
    if others:
        raise TuneDirError(f"--tune-dir {tune_dir!r} holds files ({', '.join(others[:3])}) but no {STUDY_FILE}; "
                           "choose a new or empty directory")


def open_storage(tune_dir: str, job: int = 0) -> JournalStorage:
    """The journal storage of ``tune_dir``: the caller holds :func:`locked`, or is job ``job`` > 0 of the
    process that does (:mod:`rlengine_optuna.jobs`), which has repaired the journal already."""
    path = os.path.join(tune_dir, STUDY_FILE)
    if job:
        return JournalStorage(JournalFile(path))
    repair_journal(path)
    check_journal(path)
    # Optuna's own lock file, left behind by a process killed while appending: nobody else can hold it,
    # since this process holds the dir (otherwise Optuna would wait its 30 s grace period)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path + ".lock")
    return JournalStorage(JournalFile(path))


def repair_journal(path: str) -> None:
    """Drop a half-written last line (a process killed mid-append), which would corrupt the next one."""
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return
    with open(path, "rb+") as f:
        data = f.read()
        if data.endswith(b"\n"):
            return
        keep = data.rfind(b"\n") + 1
        f.truncate(keep)
        f.flush()
        os.fsync(f.fileno())
    print(f"rlengine: warning: {path} ended in a half-written entry ({len(data) - keep} bytes, from a tune that "
          "was killed while writing it); dropped it", file=sys.stderr)


def check_journal(path: str) -> None:
    """One line naming the journal and the fix when an entry in it is not JSON (Optuna's own error names
    neither); only a damaged or hand-edited file holds one, as :func:`repair_journal` drops a torn last line."""
    if not os.path.exists(path):
        return
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise TuneDirError(
                f"{path}: line {number} of {len(lines) - 1} is not a journal entry (JSON), so the study cannot be "
                "read past it; restore the file from a copy, or move it aside to start the study afresh (the "
                "trials' run directories stay)") from None


def open_study(storage: JournalStorage, tune_dir: str, fingerprint: dict, force: bool) -> optuna.Study:
    """The tune dir's study, created on first use; one made for another search is refused unless ``force``."""
    study = optuna.create_study(storage=storage, study_name=STUDY_NAME, direction="maximize", load_if_exists=True)
    if study.direction != optuna.study.StudyDirection.MAXIMIZE:
        raise TuneDirError(f"the study in {tune_dir!r} minimizes; rlengine tune maximizes the evaluation return: "
                           "choose another --tune-dir")
    fingerprint = json.loads(json.dumps(fingerprint))  # as the journal gives it back (tuples become lists)
    stored = study.user_attrs.get(FINGERPRINT)
    if stored == fingerprint or (stored is None and not study.trials):
        study.set_user_attr(FINGERPRINT, fingerprint)
        return study
    if not force:
        raise TuneDirError(f"{difference(tune_dir, stored, fingerprint)}; {FORCE_HINT}")
    print(f"rlengine: warning: {difference(tune_dir, stored, fingerprint)}; adding to it anyway (--force)",
          file=sys.stderr)
    study.set_user_attr(FINGERPRINT, fingerprint)
    return study


def difference(tune_dir: str, stored: Optional[dict], wanted: dict) -> str:
    """One line: the first way the stored study's search differs from this command's."""
    where = f"the study in {tune_dir!r}"
    if not isinstance(stored, dict):
        return f"{where} was not made by rlengine tune"
    if stored.get("params") != wanted["params"]:
        return (f"{where} tunes {' '.join(stored.get('params') or ['nothing'])}; this command tunes "
                f"{' '.join(wanted['params'])}")
    if stored.get("objective") != wanted["objective"]:
        return f"{where} maximizes the {stored.get('objective')}; this command the {wanted['objective']}"
    old, new = stored.get("config") or {}, wanted["config"]
    key = next((k for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)), None)
    if key is None:
        return f"{where} was made by another version of rlengine tune"
    return (f"{where} was made with {key} = {_shown(old, key)}; this command has {key} = {_shown(new, key)} "
            "(its config or --set differs)")


def _shown(values: dict, key: str) -> str:
    return json.dumps(values[key]) if key in values else "(unset)"


def fingerprint_of(params: list, objective: str, config: dict) -> dict:
    """What makes two ``tune`` commands one study: the search space, the objective and the base config."""
    flat = {f"{section}.{key}": value for section, table in config.items() for key, value in table.items()}
    flat.pop("train.root_dir", None)
    return {"params": [str(p) for p in params], "objective": objective, "config": flat}


def finished_count(study: optuna.Study) -> int:
    return len(study.get_trials(deepcopy=False, states=FINISHED))


def running_count(study: optuna.Study) -> int:
    """Trials training now (in another ``--jobs`` process too)."""
    return len(study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)))


def requeue(study: optuna.Study, trial: optuna.Trial, reason: str) -> None:
    """End ``trial`` as failed (it did not finish) and queue its params again, so it is redone first."""
    trial.set_user_attr("reason", reason)
    study.tell(trial, state=TrialState.FAIL)
    study.enqueue_trial(dict(trial.params), user_attrs={"retry_of": trial.number})


def requeue_interrupted(study: optuna.Study, storage: JournalStorage) -> list[int]:
    """Trials still RUNNING in the storage (their tune was killed): failed and queued again; their numbers."""
    study_id = storage.get_study_id_from_name(STUDY_NAME)
    numbers = []
    for frozen in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        trial_id = storage.get_trial_id_from_study_id_trial_number(study_id, frozen.number)
        requeue(study, optuna.Trial(study, trial_id), "interrupted: its tune process ended while it ran; queued again")
        numbers.append(frozen.number)
    return numbers


def user_attr(trial: Any, name: str, default: Any = None) -> Any:
    return trial.user_attrs.get(name, default)
