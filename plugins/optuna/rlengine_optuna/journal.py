"""The study's journal file, appended whole or not at all, and a full disk under a tune named.

Optuna's journal backend appends each change as one line and fsyncs it.
On a full disk (``ENOSPC``, or a full quota, ``EDQUOT``) the append can
stop part-way through a line, or fail at the fsync after the page cache
took it. A torn line at the end is harmless to readers, but the next
append (of this process, or of another ``--jobs`` process) would follow it
on the same line, and the study could no longer be read past it. So
:class:`JournalFile` cuts the file back to where its append began before it
raises, under the same lock file the appends hold: what stays is every
entry written whole.

A full disk stops the tune session with :class:`TuneDiskFull`, one line
naming the file and the fix; the trial that was running stays RUNNING in the
journal, so the next session queues it again (:func:`rlengine_optuna.study.requeue_interrupted`).
"""

from __future__ import annotations

import errno
import json
import os
from typing import Any, Optional

from optuna.storages.journal import JournalFileBackend, JournalFileSymlinkLock

from rlengine import RLEngineError

#: The errors of a full disk: no space left, or the user's quota used up.
DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


class TuneDiskFull(RLEngineError):
    """The disk under the tune dir is full: the session stops; once there is space, the same command resumes."""

    def __init__(self, code: int, path: str, what: str):
        self.errno, self.path = code, path
        super().__init__(f"{os.strerror(code)} while writing {what} {path!r}: the session stopped with the study "
                         "intact (every journal entry written whole, a trial cut short queued again on resuming); "
                         "free some disk space, then resume the study with the same command and --tune-dir")


class JournalFile(JournalFileBackend):
    """Optuna's journal file backend whose append on a full disk leaves no part of its entries behind."""

    def __init__(self, path: str):
        self.path = path
        self.lock = JournalFileSymlinkLock(path)  # Optuna's default: every process of the study takes the same
        super().__init__(path, self.lock)

    def append_logs(self, logs: list[dict[str, Any]]) -> None:
        text = "".join(json.dumps(log, separators=(",", ":")) + "\n" for log in logs).encode("utf-8")
        try:
            self.lock.acquire()  # a symlink beside the journal: a full disk may refuse even that
        except OSError as error:
            if error.errno in DISK_FULL:
                raise TuneDiskFull(error.errno, self.path, "the study's journal") from error
            raise
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                _append_whole(fd, text, self.path)
            finally:
                os.close(fd)
        finally:
            self.lock.release()


def _append_whole(fd: int, data: bytes, path: str) -> None:
    """Append ``data`` and sync it, or, on a full disk, cut the file back to its size before and raise."""
    start = os.fstat(fd).st_size  # appends are serialised by the lock: the end stays here until this one
    try:
        view = memoryview(data)
        while view:  # a write may take part of the data
            view = view[os.write(fd, view):]
        os.fsync(fd)
    except OSError as error:
        if error.errno not in DISK_FULL:
            raise
        os.ftruncate(fd, start)  # frees what the torn entry took: no space needed
        os.fsync(fd)
        raise TuneDiskFull(error.errno, path, "the study's journal") from error


def full_disk_error(error: BaseException) -> Optional[OSError]:
    """The ``OSError`` of a full disk that ``error`` is or was raised from (a plugin's hook wraps what it
    raised), else None. The engine's writes give a full disk as such an error, whichever library wrote."""
    return next((cause for cause in _chain(error) if isinstance(cause, OSError) and cause.errno in DISK_FULL), None)


def disk_full_stop(error: BaseException, where: str) -> Optional[TuneDiskFull]:
    """The :class:`TuneDiskFull` that ``error`` is or comes from a full disk of (None: another error); a file
    of a trial's run is named as ``where`` wrote it."""
    own = next((cause for cause in _chain(error) if isinstance(cause, TuneDiskFull)), None)
    if own is not None:  # the journal's, perhaps inside the error of the hook that reported to the study
        return own
    full = full_disk_error(error)
    if full is None:
        return None
    return TuneDiskFull(full.errno, str(full.filename) if full.filename else "(a file it did not name)", where)


def _chain(error: BaseException) -> list:
    found: list = []
    cause: Optional[BaseException] = error
    while cause is not None and cause not in found:
        found.append(cause)
        cause = cause.__cause__
    return found
