"""Writing a file whole or not at all: the one atomic write of the core and the plugins.

A file a run rewrites (a checkpoint's marker, ``config.toml``, a tracker's
run file, a tune's ``best.toml``) must never be seen half written, even
after a kill or a power cut: readers find either the old content or all of
the new. The data goes to a temporary file beside the target (the same
directory, so the rename stays on one file system), is synced, and is
renamed over the target; the rename is synced by syncing the directory.

The temporary file is ``<path>.tmp-<pid>``: cleanup code that sweeps a
killed run's leftovers recognises that name (``.tmp-`` followed by digits).
It is removed when the write fails. Standard library only, so every layer
and every plugin can use it (``rlengine.write_atomically``).

A full disk (``ENOSPC``, or a full quota, ``EDQUOT``) is reported the same
wherever the engine writes, through :func:`writing`: whichever library did
the writing (Python's files, TensorFlow's checkpoint and summary ops, whose
errors carry only the C library's text), the error that leaves is an
``OSError`` of that errno naming the path being written, and the temporary
files the write made are gone. The command line prints it as one line with
the fix (:func:`rlengine.errors.os_error_line`).
"""

from __future__ import annotations

import contextlib
import errno
import glob
import os
import shutil
from typing import Iterator, Optional, Union

#: The errors of a full disk: no space left, or the user's quota used up.
DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


def write_atomically(path: str, data: Union[str, bytes], *, mode: int = 0o666, replace: bool = True) -> bool:
    """Put ``data`` (text is written as UTF-8, newlines as given) at ``path``, whole or not at all.

    ``mode`` is the new file's permission bits before the umask (``0o600``:
    readable by its owner only). With ``replace=False`` an existing file is
    kept, as when two processes create the same file at once and the first
    one wins; the result says whether this call wrote ``path``.
    """
    raw = data.encode("utf-8") if isinstance(data, str) else data
    tmp = f"{path}.tmp-{os.getpid()}"
    with writing(path):
        try:
            _write_synced(tmp, raw, mode)
            if replace:
                os.replace(tmp, path)
            else:
                try:
                    os.link(tmp, path)  # fails when path exists, unlike a rename
                except FileExistsError:
                    return False
        finally:
            if os.path.lexists(tmp):  # a failed write, or the name left behind by os.link
                os.remove(tmp)
        fsync_path(os.path.dirname(path) or ".")  # the rename itself reaches the disk
    return True


@contextlib.contextmanager
def writing(path: str, *leftovers: str) -> Iterator[None]:
    """A block that writes ``path`` (a file, or a directory of files): a full disk in it leaves as
    ``OSError(ENOSPC or EDQUOT, ..., path)`` (the file, if a directory's error names it), after
    the files and folders matching the glob patterns ``leftovers`` (what the block made on its way) are
    removed. An error that names its file already keeps its name; any other error passes unchanged."""
    try:
        yield
    except Exception as error:
        code = disk_full(error)
        if code is None:
            raise
        for pattern in leftovers:
            for leftover in glob.glob(glob.escape(os.path.dirname(pattern)) + os.sep + os.path.basename(pattern)):
                _remove(leftover)
        if isinstance(error, OSError) and error.errno == code and error.filename:
            raise
        raise OSError(code, os.strerror(code), _file_written(error, code, path)) from error


def _file_written(error: BaseException, code: int, path: str) -> str:
    """``path``, or, when it is a directory, the file under it that the error's text names before the C
    library's (TensorFlow's: ``<file>; No space left on device``)."""
    words = str(error).partition(os.strerror(code))[0].rstrip("; :").split()
    named = words[-1] if words else ""
    inside = os.path.isdir(path) and named.startswith(os.path.join(path, ""))
    return named if inside else path


def disk_full(error: BaseException) -> Optional[int]:
    """``ENOSPC`` or ``EDQUOT`` when ``error`` (or what it was raised from) says the disk is full, else None.

    TensorFlow's errors are no ``OSError``: only their text (the C library's) says it."""
    causes: Optional[BaseException] = error
    while causes is not None:  # the error, then what it was raised from
        if isinstance(causes, OSError) and causes.errno in DISK_FULL:
            return causes.errno
        for code in DISK_FULL:
            if os.strerror(code) in str(causes):
                return code
        causes = causes.__cause__
    return None


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.remove(path)


def _write_synced(path: str, raw: bytes, mode: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(raw)
        f.flush()
        os.fsync(f.fileno())


def fsync_path(path: str) -> None:
    """Sync a file or directory that is already written (a directory: the names in it)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
