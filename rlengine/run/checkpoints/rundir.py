"""The run directory ``train.root_dir``: one writer at a time, written only once the run has started,
and only when it is empty or rlengine's own.

``rlengine train`` holds an OS lock (``flock``) on ``<root_dir>/.rlengine.lock``
for the whole run; the file names the holder's PID, host and start time, so a
second ``train`` into the same directory is refused naming them. The OS
drops the lock when the holder dies, even by ``kill -9``, so a leftover lock
file means nothing and needs no cleaning up. ``eval``, ``play``, ``export``
and ``plot`` only read, and take no lock.

The ownership marker ``<root_dir>/.rlengine-run`` is written when a run first
starts (with ``config.toml``, after the build and the checkpoint restore).
A root dir that exists, holds anything, and has neither the marker nor the
``config.toml`` plus ``checkpoints/`` of an older version's run is someone
else's: it is refused rather than written into. A start that is refused (or
fails) before the run has started leaves the directory as it was, and removes
it again if this process created it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import sys
import time
from typing import Iterator, Optional

from rlengine.errors import NotARunDirectory, RLEngineError, RunDirBusy
from rlengine.files import write_atomically, writing
from rlengine.plugin.markers import CORE_VERSION

if sys.platform == "win32":
    import msvcrt
else:
    import fcntl

LOCK_FILE = ".rlengine.lock"
MARKER_FILE = ".rlengine-run"
CONFIG_FILE = "config.toml"
# Files an operating system's file browser leaves in any folder; they do not make it someone's data.
OS_LITTER = frozenset({".DS_Store", "Thumbs.db", "desktop.ini"})
_LOCK_ATTEMPTS = 50
_WINDOWS_LOCK_OFFSET = 1 << 20  # msvcrt locks a byte range; one far past the holder's text keeps it readable


# -- whose directory is it ------------------------------------------------------------
def is_run_dir(root_dir: str) -> bool:
    """Whether ``root_dir`` is a run directory rlengine wrote (this version's marker, or an older run's layout)."""
    if os.path.isfile(os.path.join(root_dir, MARKER_FILE)):
        return True
    return os.path.isfile(os.path.join(root_dir, CONFIG_FILE)) and os.path.isdir(os.path.join(root_dir, "checkpoints"))


def _ours(name: str) -> bool:
    """Names rlengine may leave in a directory before its run has started (lock, marker, their temp files)."""
    return name.startswith((LOCK_FILE, MARKER_FILE)) or name in OS_LITTER


def check_only_ours(root_dir: str) -> None:
    """Refuse a ``root_dir`` that is a file, or a non-empty directory that is not an rlengine run's."""
    if not os.path.lexists(root_dir):
        return
    if not os.path.isdir(root_dir):
        raise NotARunDirectory(f"--root-dir {root_dir} is a file, not a directory: choose another --root-dir")
    if is_run_dir(root_dir):
        return
    foreign = sorted((name for name in os.listdir(root_dir) if not _ours(name)),
                     key=lambda name: (name.startswith("."), name))  # a visible name is the telling one
    if foreign:
        raise NotARunDirectory(f"--root-dir {root_dir} holds files rlengine did not write (e.g. {foreign[0]!r}) and is "
                         "not an rlengine run directory: choose a new or empty --root-dir")


# -- the lock --------------------------------------------------------------------------
_held_fds: set = set()  # lock files this process holds; a forked child closes its copies (see _forget_in_child)


def _forget_in_child() -> None:
    # A forked child (multiprocessing environment workers) shares the lock; closing its copy, unlike
    # LOCK_UN, leaves the parent holding it, and lets the lock go when the parent dies.
    for fd in list(_held_fds):
        with contextlib.suppress(OSError):
            os.close(fd)
    _held_fds.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


def _try_lock(fd: int) -> bool:
    """Take the exclusive lock on ``fd`` without waiting; False when another open file holds it."""
    try:
        if sys.platform == "win32":
            os.lseek(fd, _WINDOWS_LOCK_OFFSET, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        else:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # BlockingIOError on POSIX, PermissionError on Windows
        return False
    return True


def _same_file(fd: int, path: str) -> bool:
    """Whether ``path`` still names the file ``fd`` has open (the previous holder may have removed it)."""
    try:
        here, there = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def _read_holder(fd: int) -> Optional[dict]:
    """The holder's ``{"pid", "host", "since"}``; it writes them just after locking, so wait a moment for them."""
    for _ in range(20):
        os.lseek(fd, 0, os.SEEK_SET)
        try:
            holder = json.loads(os.read(fd, 4096).decode("utf-8"))
        except ValueError:
            holder = None
        if isinstance(holder, dict) and "pid" in holder:
            return holder
        time.sleep(0.05)
    return None


def _write_holder(fd: int) -> None:
    text = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()})
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, text.encode("utf-8"))


def busy_message(root_dir: str, holder: Optional[dict]) -> str:
    if holder is None:
        who = "another process"
    else:
        host = holder.get("host")
        who = f"process {holder['pid']}" + (f" on {host}" if host and host != socket.gethostname() else "")
        if isinstance(holder.get("since"), (int, float)):
            who += f" (since {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(holder['since']))})"
    return f"{root_dir} is being trained by {who}; wait for it, stop it, or choose another --root-dir"


class RunDirLock:
    """The exclusive lock of one run directory, held from :meth:`acquire` to :meth:`release`."""

    def __init__(self, path: str, fd: int):
        self.path, self.fd = path, fd

    @classmethod
    def acquire(cls, root_dir: str) -> "RunDirLock":
        """Lock ``root_dir`` (which must exist), or raise :class:`RunDirBusy` naming the holder."""
        path = os.path.join(root_dir, LOCK_FILE)
        for _ in range(_LOCK_ATTEMPTS):
            fd = _open(path)
            if not _try_lock(fd):
                holder = _read_holder(fd)
                os.close(fd)
                raise RunDirBusy(busy_message(root_dir, holder))
            if _same_file(fd, path):
                try:
                    with writing(path):  # a full disk: named, and the lock let go
                        _write_holder(fd)
                except OSError:
                    os.close(fd)
                    raise
                _held_fds.add(fd)
                return cls(path, fd)
            os.close(fd)  # locked a file its holder had just removed on release: lock the one there now
        raise RunDirBusy(busy_message(root_dir, None))  # runs start and end there faster than we can look

    def release(self) -> None:
        """Remove the lock file, then let the lock go (in that order, so a waiting opener sees a fresh file)."""
        with contextlib.suppress(OSError):  # Windows cannot remove an open file; a leftover is harmless
            os.unlink(self.path)
        _held_fds.discard(self.fd)
        os.close(self.fd)


def _open(path: str) -> int:
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise RLEngineError(f"cannot write into --root-dir {os.path.dirname(path)} ({exc.strerror}): "
                            "choose a --root-dir you can write to") from None


# -- claiming a directory for one run --------------------------------------------------
def _make_dirs(path: str) -> list:
    """Create ``path`` and its missing parents; the ones this call created, outermost first."""
    missing, head = [], os.path.abspath(path)
    while not os.path.lexists(head):
        missing.append(head)
        head = os.path.dirname(head)
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise RLEngineError(f"cannot create --root-dir {path} ({exc.strerror}): choose a --root-dir "
                            "you can write to") from None
    return missing[::-1]


def _remove_new_entries(root_dir: str, before: set) -> None:
    """Remove what appeared in ``root_dir`` since it was claimed, when the run never started.

    Only this process wrote there meanwhile (it held the lock), and before the
    start nothing worth keeping exists: this catches files a plugin (a writer
    that opens its file early, a ``rlengine_train_start`` hook) made for a
    run that was then refused.
    """
    for name in set(os.listdir(root_dir)) - before:
        path = os.path.join(root_dir, name)
        with contextlib.suppress(OSError):
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.remove(path)


def _remove_if_empty(created: list) -> None:
    for directory in reversed(created):  # innermost first; one that is not empty keeps its parents too
        try:
            os.rmdir(directory)
        except OSError:
            return


class RunDirectory:
    """A claimed root dir; :meth:`mark_started` writes rlengine's files once the run is known to start."""

    def __init__(self, root_dir: str):
        self.root_dir = root_dir
        self.started = False

    def mark_started(self, config_text: str) -> None:
        """Write the ownership marker (first start only) and the effective ``config.toml``."""
        marker = os.path.join(self.root_dir, MARKER_FILE)
        if not os.path.isfile(marker):  # before config.toml: a kill between them still leaves a run dir
            write_atomically(marker, json.dumps({"rlengine": CORE_VERSION, "created": time.time(),
                                                 "host": socket.gethostname(), "pid": os.getpid()}) + "\n")
        self.started = True
        write_atomically(os.path.join(self.root_dir, CONFIG_FILE), config_text)


@contextlib.contextmanager
def claimed(root_dir: str) -> Iterator[RunDirectory]:
    """Hold ``root_dir`` for one run: refused if it is someone else's or being trained; on exit the lock
    goes, and a run that never started leaves no trace (the dirs this created are removed again)."""
    check_only_ours(root_dir)  # read-only: a refusal here has written nothing
    created = _make_dirs(root_dir)
    try:
        lock = RunDirLock.acquire(root_dir)
    except BaseException:
        _remove_if_empty(created)
        raise
    before = set(os.listdir(root_dir))  # with the lock file, which release() removes
    directory = RunDirectory(root_dir)
    try:
        yield directory
    finally:
        if not directory.started:
            _remove_new_entries(root_dir, before)
        lock.release()
        if not directory.started:
            _remove_if_empty(created)
