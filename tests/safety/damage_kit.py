"""What the tests of damaged checkpoints share: a finished toy run, its files, damage done to them, and the
warning lines that name a checkpoint skipped."""

from __future__ import annotations

from pathlib import Path

from rlengine.run.engine import Engine
from rlengine.testing import testing_plugin, tiny_config

DATA = "data-00000-of-00001"


def toy_engine(root: Path, **train) -> Engine:
    return Engine(tiny_config(str(root), checkpoint_interval=1, keep_checkpoints=2, **train),
                  extra_plugins=[("testing", testing_plugin())])


def trained_toy_run(tmp_path: Path) -> Path:
    """A finished toy run of 4 iterations with ``ckpt-3`` and ``ckpt-4``."""
    root = tmp_path / "run"
    toy_engine(root).train()
    return root


def checkpoint_file(root: Path, number: int, kind: str = DATA) -> Path:
    return root / "checkpoints" / f"ckpt-{number}.{kind}"


def flip_byte(path: Path, offset: int | None = None) -> bytes:
    """XOR one byte in place (the size stays); returns the damaged bytes."""
    data = bytearray(path.read_bytes())
    data[len(data) // 2 if offset is None else offset] ^= 0xFF
    path.write_bytes(bytes(data))
    return bytes(data)


def set_aside_dirs(root: Path, number: int) -> list:
    return sorted(p for p in (root / "checkpoints").iterdir() if p.name.startswith(f"ckpt-{number}.damaged-"))


def checkpoint_warnings(err: str) -> list:
    return [line for line in err.splitlines() if line.startswith("rlengine: warning: checkpoint")]
