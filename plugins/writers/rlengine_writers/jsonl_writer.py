"""The ``jsonl`` writer: one JSON object per summary row in ``<root_dir>/metrics.jsonl``.

The file is created (or opened for appending) at the first row, never
before: a run that is refused before it starts leaves no file behind. A
resumed run continues it, after dropping the rows a killed run wrote past the
checkpoint it resumes from. Each row
is written as one complete line and flushed at once, so a crash leaves at
most whole rows behind; rows are easy to load with ``pandas.read_json(path,
lines=True)`` or a ``json.loads`` per line.
"""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any, Mapping, Optional

import attrs

from rlengine import SummaryWriter, write_atomically
from rlengine_writers.values import INDEX_KEYS, finite_or_none, to_number


def _relative_path(instance: Any, attribute: attrs.Attribute, value: str) -> None:
    # The file must stay inside the run directory so runs never share it.
    if not value or os.path.isabs(value) or ".." in value.replace("\\", "/").split("/"):
        raise ValueError(f"{attribute.name} must be a relative path inside the run directory, got {value!r}")


@attrs.define
class JsonlConfig:
    """Options of the ``jsonl`` writer (TOML section ``[jsonl]``)."""

    # File name of the metrics log, relative to the run directory.
    filename: str = attrs.field(
        default="metrics.jsonl", validator=[attrs.validators.instance_of(str), _relative_path]
    )


def _json_value(value: Any) -> Any:
    """A JSON-safe plain value: numbers (null when not finite), strings kept, else None."""
    if isinstance(value, str):
        return value
    number = to_number(value)
    return None if number is None else finite_or_none(number)


def _ends_with_newline(path: str) -> bool:
    """Whether the file is empty or ends with a newline (i.e. holds only whole rows)."""
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        if f.tell() == 0:
            return True
        f.seek(-1, os.SEEK_END)
        return f.read(1) == b"\n"


def _row_at_or_before(line: str, env_steps: int) -> bool:
    """Whether ``line`` is a whole row whose ``env_steps`` is at most ``env_steps``."""
    try:
        row = json.loads(line)
    except ValueError:  # a torn or empty line
        return False
    return isinstance(row, dict) and isinstance(row.get("env_steps"), (int, float)) and row["env_steps"] <= env_steps


class JsonlWriter(SummaryWriter):
    """Appends every row to a JSON-lines file."""

    config_class = JsonlConfig

    def __init__(self, root_dir: str, config: JsonlConfig, total_env_steps: int = 0):
        super().__init__(root_dir, config, total_env_steps)
        self.path = os.path.join(root_dir, config.filename)
        self._file: Optional[Any] = None  # opened by the first row
        self._closed = False

    def _open(self) -> Any:
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        needs_newline = os.path.exists(self.path) and not _ends_with_newline(self.path)
        # Line buffering plus an explicit flush per row: every row reaches
        # the OS as soon as it is written.
        self._file = open(self.path, "a", buffering=1, encoding="utf-8", newline="\n")
        if needs_newline:
            # A previous process died mid-row (e.g. power loss); start a fresh
            # line so the torn row does not swallow the next one.
            self._file.write("\n")
        return self._file

    def write(self, metrics: Mapping[str, Any]) -> None:
        if self._closed:
            raise ValueError(f"write() on a closed jsonl writer ({self.path})")
        file = self._file or self._open()
        # Index keys first, so the file reads well with head/less.
        row = {k: _json_value(metrics[k]) for k in INDEX_KEYS if k in metrics}
        row.update((k, _json_value(v)) for k, v in metrics.items() if k not in row)
        # One write call per complete line, never partial JSON.
        try:
            file.write(json.dumps(row, allow_nan=False) + "\n")
            file.flush()
        except OSError as error:  # a full disk, say: the torn row goes, and the error names the file
            self._drop_torn_row()
            if error.filename:
                raise
            raise OSError(error.errno, error.strerror, self.path) from error

    def _drop_torn_row(self) -> None:
        """Close the file (what its buffer still holds is dropped), and cut a row written in part."""
        file, self._file = self._file, None
        with contextlib.suppress(OSError):
            file.close()  # flushes the buffer once more, which fails as the write did
        with contextlib.suppress(OSError), open(self.path, "rb+") as f:
            content = f.read()
            f.truncate(content.rfind(b"\n") + 1)

    def resume_from(self, env_steps: int) -> None:
        """Drop the rows past ``env_steps`` (and any torn row) that a killed run left behind.

        A file that holds none of them is left as it is, and a missing one is not created.
        """
        if self._closed:
            raise ValueError(f"resume_from() on a closed jsonl writer ({self.path})")
        if self._file is not None:  # rows written already: reopen after rewriting
            self._file.close()
            self._file = None
        if not os.path.exists(self.path):
            return
        with open(self.path, encoding="utf-8", newline="\n") as f:
            old = f.read()
        kept = "".join(line + "\n" for line in old.split("\n") if _row_at_or_before(line, env_steps))
        if kept == old:
            return
        write_atomically(self.path, kept)  # replaced whole, so a kill keeps either file

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        self._closed = True
        if self._file is not None:
            self._file.close()
            self._file = None
