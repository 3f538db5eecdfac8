"""A checkpoint's files on disk: written safely, marked complete, checked, and set aside when damaged.

A checkpoint ``ckpt-<n>`` is TensorFlow's files (``ckpt-<n>.index``,
``ckpt-<n>.data-*``) plus its *marker* ``ckpt-<n>.complete``: JSON written
atomically after those files are synced, recording each file's size
(``files``) and checksum (``checksums``). Only a marked checkpoint counts.
A file can still change after it was marked (a disk or copy that flips
bytes, a truncating tool); a flipped byte in a float tensor restores
without any error, so a checkpoint is checked against its marker before it
is restored. Markers of earlier versions hold no checksums: those
checkpoints are checked by size only.

A damaged checkpoint is *set aside*: its files move into
``ckpt-<n>.damaged-<time>/`` (never deleted; no pruning touches that name),
so the resumed run saves that iteration afresh instead of keeping the
damaged copy because a "complete" one exists.
"""

from __future__ import annotations

import json
import os
import re
import time
import zlib
from typing import Optional

from rlengine.files import fsync_path, write_atomically

MARKER = ".complete"
FILE_NAME = re.compile(r"^ckpt-(\d+)(\.index|\.data-\d+-of-\d+|_temp.*|\.complete|\.complete\.tmp-\d+)$")
CHECKSUM = "crc32"  # of each file's bytes: catches every error burst up to 32 bits (a flipped byte) and is cheap
_CHUNK = 1 << 20  # bytes read at a time while checksumming: memory stays flat for a 1M-row replay


def checkpoint_dir(root_dir: str) -> str:
    return os.path.join(root_dir, "checkpoints")


def checksum(path: str, sync: bool = False) -> str:
    """``"crc32:<hex>"`` of the file's bytes, read in chunks; with ``sync``, fsynced as well.

    The files were just written, so they are read from the page cache: for
    the 1M-row SAC replay of ``benchmarks/checkpoint_size.py`` this adds
    about a sixth to a write, where BLAKE2b would add half and SHA-256 more
    than a quarter (docs/performance.md). The damage to catch is accidental,
    so a CRC is enough.
    """
    crc = 0
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            crc = zlib.crc32(chunk, crc)  # zlib releases the GIL here: actor threads keep running
        if sync:
            os.fsync(f.fileno())
    return f"{CHECKSUM}:{crc:08x}"


def _files_of(directory: str, number: int) -> list:
    """TensorFlow's files of ``ckpt-<number>`` (index and data shards), by name."""
    names = []
    for name in os.listdir(directory):
        match = FILE_NAME.match(name)
        if match and int(match.group(1)) == number and match.group(2).startswith((".index", ".data-")):
            names.append(name)
    return sorted(names)


def mark_complete(directory: str, number: int, **fields) -> None:
    """Sync ``ckpt-<number>``'s files, then write its marker with their sizes and checksums."""
    sizes, sums = {}, {}
    for name in _files_of(directory, number):
        path = os.path.join(directory, name)
        sums[name] = checksum(path, sync=True)
        sizes[name] = os.path.getsize(path)
    marker = {**fields, "files": sizes, "checksums": sums}
    write_atomically(os.path.join(directory, f"ckpt-{number}{MARKER}"), json.dumps(marker))


def write_tf_index(directory: str) -> None:
    """TensorFlow's own index (``tf.train.latest_checkpoint``), for tools; the markers are what counts here."""
    kept = [os.path.basename(prefix) for _, prefix, _ in reversed(complete_checkpoints(directory))]
    if kept:
        write_atomically(os.path.join(directory, "checkpoint"), f'model_checkpoint_path: "{kept[-1]}"\n'
                         + "".join(f'all_model_checkpoint_paths: "{name}"\n' for name in kept))


# -- finding and checking marked checkpoints --------------------------------------------
def _read_marker(path: str) -> Optional[dict]:
    try:
        with open(path, encoding="utf-8") as f:
            marker = json.load(f)
    except (OSError, ValueError):
        return None
    return marker if isinstance(marker, dict) else None


def marked_checkpoints(directory: str) -> list:
    """``(iteration, prefix, marker)`` of every checkpoint with a marker, newest first.

    ``marker`` is None when the marker cannot be read (it was written
    atomically, so it was damaged afterwards).
    """
    if not os.path.isdir(directory):
        return []
    found = []
    for name in os.listdir(directory):
        match = FILE_NAME.match(name)
        if match and match.group(2) == MARKER:
            number = int(match.group(1))
            marker = _read_marker(os.path.join(directory, name))
            found.append((number, os.path.join(directory, f"ckpt-{number}"), marker))
    return sorted(found, key=lambda item: item[0], reverse=True)


def _size_damage(directory: str, marker: Optional[dict], number: int) -> str:
    """What is wrong with the files' presence and sizes, or "" when they are as the marker says."""
    if marker is None:
        return f"ckpt-{number}{MARKER} is unreadable"
    files = marker.get("files")
    if not isinstance(files, dict) or not files:
        return f"ckpt-{number}{MARKER} lists no files"
    for name, size in sorted(files.items()):
        path = os.path.join(directory, name)
        if not os.path.isfile(path):
            return f"{name} is missing"
        if os.path.getsize(path) != size:
            return f"{name} has {os.path.getsize(path)} bytes, its marker says {size}"
    return ""


def damage(directory: str, number: int, marker: Optional[dict]) -> str:
    """What is wrong with ``ckpt-<number>``, or "" when its files match its marker.

    Sizes first (cheap), then the checksums the marker records; an older
    marker without checksums is checked by size only.
    """
    wrong = _size_damage(directory, marker, number)
    if wrong or marker is None:
        return wrong
    for name, recorded in sorted((marker.get("checksums") or {}).items()):
        if not str(recorded).startswith(f"{CHECKSUM}:"):
            continue  # another kind of checksum (a later version): the sizes matched
        try:
            actual = checksum(os.path.join(directory, name))
        except OSError as exc:  # removed meanwhile, or unreadable
            return f"{name} cannot be read ({exc.strerror or exc})"
        if actual != recorded:
            return f"{name}: checksum mismatch"
    return ""


def complete_checkpoints(directory: str) -> list:
    """``(iteration, prefix, marker)`` of every marked checkpoint whose files have their recorded sizes.

    Newest first. Cheap (no checksums): for pruning and for telling whether
    an iteration is saved already. What is restored is checked by :func:`damage`.
    """
    return [(number, prefix, marker) for number, prefix, marker in marked_checkpoints(directory)
            if not _size_damage(directory, marker, number)]


def newest_sound_checkpoint(directory: str) -> Optional[str]:
    """The prefix of the newest checkpoint whose files match their marker, checksums included, or None."""
    for number, prefix, marker in marked_checkpoints(directory):
        if not damage(directory, number, marker):
            return prefix
    return None


# -- setting damaged checkpoints aside -------------------------------------------------------
def set_aside(directory: str, number: int) -> str:
    """Move ``ckpt-<number>``'s files and marker into a new ``ckpt-<number>.damaged-<time>/``; its path.

    The data files move first and the marker last: a kill in between
    leaves a marker whose files are missing, which counts as damaged and is
    set aside by the next resume. Nothing is deleted.
    """
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target, suffix = os.path.join(directory, f"ckpt-{number}.damaged-{stamp}"), 1
    while os.path.exists(target):  # set aside twice within a second
        suffix += 1
        target = os.path.join(directory, f"ckpt-{number}.damaged-{stamp}-{suffix}")
    os.mkdir(target)
    for name in [*_files_of(directory, number), f"ckpt-{number}{MARKER}"]:
        if os.path.exists(os.path.join(directory, name)):
            os.replace(os.path.join(directory, name), os.path.join(target, name))
    fsync_path(target)
    fsync_path(directory)
    write_tf_index(directory)  # it may have named the checkpoint just moved
    return target
