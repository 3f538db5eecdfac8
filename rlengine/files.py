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
"""

from __future__ import annotations

import os
from typing import Union


def write_atomically(path: str, data: Union[str, bytes], *, mode: int = 0o666, replace: bool = True) -> bool:
    """Put ``data`` (text is written as UTF-8, newlines as given) at ``path``, whole or not at all.

    ``mode`` is the new file's permission bits before the umask (``0o600``:
    readable by its owner only). With ``replace=False`` an existing file is
    kept, as when two processes create the same file at once and the first
    one wins; the result says whether this call wrote ``path``.
    """
    raw = data.encode("utf-8") if isinstance(data, str) else data
    tmp = f"{path}.tmp-{os.getpid()}"
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
