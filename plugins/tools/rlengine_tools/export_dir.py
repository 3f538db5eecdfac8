"""Where ``rlengine export`` writes: a new or empty directory, or over an earlier export, nothing else.

An export is written beside its directory, in ``.OUT.rlengine-export-tmp-<pid>``,
and ends with :data:`MARKER_FILE`, which lists every file the export wrote.
Only then is it swapped in: an earlier export is moved aside to
``.OUT.rlengine-export-old-<pid>``, the new one renamed into place, the old
one deleted. A directory is replaced only when it is an earlier export and
holds nothing but the files its marker lists, so a note dropped into an
export directory is never deleted with it. A killed export leaves its
staging directories behind; the next export to the same directory removes
those of processes that are gone, and puts an earlier export that was moved
aside back when nothing took its place.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
from typing import Optional

from rlengine import RLEngineError

MARKER_FILE = "rlengine-export.json"
MARKER_FORMAT = 1
_STAGING = re.compile(r"\.(?P<name>.+)\.rlengine-export-(?P<kind>tmp|old)-(?P<pid>\d+)")
#: What exports write besides their marker; a directory of only these, whose signature.json is one of
#: ours, is an earlier export too (exports before the marker wrote a subset: upgrading rlengine-tools
#: does not refuse a re-export; and one whose marker was lost is replaced as well).
_UNMARKED_EXPORT_FILES = ("saved_model.pb", "fingerprint.pb", "signature.json", "README.txt",
                          "variables/variables.*", "policy.tflite", "initial_state.npz")


def staging_dir(out_dir: str, kind: str, pid: Optional[int] = None) -> str:
    """``.OUT.rlengine-export-<kind>-<pid>`` beside ``out_dir``: ``tmp`` is being written, ``old`` replaced."""
    parent, name = os.path.split(out_dir)
    return os.path.join(parent, f".{name}.rlengine-export-{kind}-{os.getpid() if pid is None else pid}")


def files_under(directory: str) -> list[str]:
    """Every file below ``directory`` (symbolic links too), as sorted ``/``-separated relative paths."""
    out = []
    for root, dirs, files in os.walk(directory):
        links = [d for d in dirs if os.path.islink(os.path.join(root, d))]  # os.walk does not enter them
        for name in [*files, *links]:
            out.append(os.path.relpath(os.path.join(root, name), directory).replace(os.sep, "/"))
    return sorted(out)


def write_marker(directory: str, info: dict) -> None:
    """Write the marker last: a directory that has one is a whole export."""
    files = [f for f in files_under(directory) if f != MARKER_FILE]
    marker = {"format": MARKER_FORMAT, "algorithm": info.get("algorithm"), "env": info.get("env"),
              "checkpoint": info.get("checkpoint"), "files": files}
    with open(os.path.join(directory, MARKER_FILE), "w", encoding="utf-8") as f:
        json.dump(marker, f, indent=2)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())


def _read_json(path: str) -> Optional[dict]:
    try:
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def files_of_earlier_export(out_dir: str) -> Optional[list[str]]:
    """The files an earlier export in ``out_dir`` wrote, as patterns; None when it is not one."""
    marker = _read_json(os.path.join(out_dir, MARKER_FILE))
    if marker is not None and isinstance(marker.get("files"), list):
        return [MARKER_FILE, *(f for f in marker["files"] if isinstance(f, str))]
    signature = _read_json(os.path.join(out_dir, "signature.json"))
    if signature is not None and {"format", "algorithm", "checkpoint", "functions"} <= set(signature):
        return list(_UNMARKED_EXPORT_FILES)
    return None


def check_out_dir(out_dir: str) -> None:
    """Refuse, in one line, to write anywhere but a new or empty directory or an earlier export."""
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise RLEngineError(f"export directory {out_dir!r} is a file: choose a new directory name")
    try:
        if not os.path.isdir(out_dir) or not os.listdir(out_dir):
            return
    except OSError as exc:
        raise RLEngineError(f"export directory {out_dir!r} cannot be read ({exc.strerror}): choose a directory "
                            "you can write to") from None
    ours = files_of_earlier_export(out_dir)
    if ours is None:
        raise RLEngineError(f"export directory {out_dir!r} exists and is not an earlier export: choose a new or "
                            f"empty directory (an export replaces only a directory holding its {MARKER_FILE})")
    foreign = [f for f in files_under(out_dir) if not any(fnmatch.fnmatchcase(f, p) for p in ours)]
    if foreign:
        more = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
        raise RLEngineError(f"export directory {out_dir!r} is an earlier export but also holds {foreign[0]!r}{more}, "
                            "which no export wrote: move it out, or choose a new or empty directory")


def _process_is_gone(pid: int) -> bool:
    if pid == os.getpid():  # a directory of an earlier process with our id: this one has made none yet
        return True
    if os.name != "posix":  # os.kill would end the process there; leave its directories alone
        return False
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return True
    except OSError:  # it exists but is someone else's
        return False
    return False


def remove_stale_staging(out_dir: str) -> list[str]:
    """Clear the staging directories of killed exports to ``out_dir``; returns what was removed or restored.

    An earlier export moved aside by an export killed before the new one
    took its place is renamed back to ``out_dir``, so it is never lost.
    """
    parent, name = os.path.split(out_dir)
    try:
        entries = sorted(os.listdir(parent or "."))
    except OSError:  # no parent yet: nothing stale either
        return []
    done = []
    for entry in entries:
        match = _STAGING.fullmatch(entry)
        if not match or match["name"] != name or not _process_is_gone(int(match["pid"])):
            continue
        path = os.path.join(parent, entry)
        if match["kind"] == "old" and not _restored(path, out_dir) and not _holds_an_export(out_dir):
            continue  # something else took its place: the earlier export may be its only copy
        if os.path.exists(path):
            shutil.rmtree(path, ignore_errors=True)
        done.append(path)
    return done


def _restored(old: str, out_dir: str) -> bool:
    """Rename an earlier export a killed export moved aside back to ``out_dir``, if nothing took its place."""
    if os.path.isdir(out_dir) and not os.path.islink(out_dir) and not os.listdir(out_dir):
        os.rmdir(out_dir)
    if os.path.lexists(out_dir):
        return False
    os.rename(old, out_dir)
    return True


def _holds_an_export(out_dir: str) -> bool:
    return os.path.isdir(out_dir) and files_of_earlier_export(out_dir) is not None


def swap_in(tmp: str, out_dir: str) -> None:
    """Put the finished export ``tmp`` at ``out_dir``; an earlier export there is deleted only after."""
    check_out_dir(out_dir)  # again: the directory may have changed while the model was written
    old = staging_dir(out_dir, "old")
    if os.path.isdir(out_dir) and os.listdir(out_dir):
        os.rename(out_dir, old)
    elif os.path.isdir(out_dir):
        os.rmdir(out_dir)  # empty: nothing to keep, and not every system renames onto a directory
    try:
        os.rename(tmp, out_dir)
    except OSError:
        if os.path.isdir(old):
            os.rename(old, out_dir)  # the earlier export goes back where it was
        raise
    shutil.rmtree(old, ignore_errors=True)
