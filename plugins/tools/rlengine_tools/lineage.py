"""A population's members as one curve each: each member's generations joined where they begin.

``rlengine tune --ray --pbt`` writes a run directory per member and generation, with the member's
``lineage.json`` beside them::

    member-<k>/gen-<g>/      gen-0 from scratch; each later one from a donor's checkpoint
    member-<k>/lineage.json  [{"generation": g, "env_steps": E_g, "donor": ..., "values": {...}}, ...]

Generation ``g`` started from a copy of its donor at ``E_g`` env steps, so its ``metrics.jsonl``
holds the donor's rows up to ``E_g`` and its own after. The member's curve takes, from each
generation, the rows of its own stretch: after ``E_g``, up to where the next generation began. At
each exploit the line jumps to the donor's level, which is what exploiting did to the member.
"""

from __future__ import annotations

import json
import os
import re
import sys
from typing import Callable, Collection, Iterable

__all__ = ["LINEAGE_FILE", "member_of", "member_rows", "split_members"]

LINEAGE_FILE = "lineage.json"
_GENERATION = re.compile(r"gen-(\d+)")


def member_of(run_dir: str) -> str | None:
    """The member directory of a generation's run directory (``member-k/gen-g`` beside a lineage), else ``None``."""
    path = os.path.normpath(run_dir)
    parent = os.path.dirname(path)
    if _GENERATION.fullmatch(os.path.basename(path)) and os.path.isfile(os.path.join(parent, LINEAGE_FILE)):
        return parent
    return None


def split_members(runs: Iterable[str], named: Collection[str] = ()) -> tuple[list, list]:
    """``(members, other runs)``: each member directory once, in the order its first generation came. A run in
    ``named`` (normalised paths the user gave) stays a run, and so do the generations of a member whose lineage
    cannot be read (one warning names the file)."""
    members: dict = {}
    others = []
    for run in runs:
        member = None if os.path.normpath(run) in named else member_of(run)
        if member is not None and member not in members:
            members[member] = _lineage(member)
        if member is None or members[member] is None:
            others.append(run)
    return [m for m, lineage in members.items() if lineage is not None], others


def member_rows(member_dir: str, read_rows: Callable[[str], list]) -> list:
    """The member's metrics rows, generation after generation, each over its own stretch of env steps."""
    starts = [float(g.get("env_steps", 0) or 0) for g in _lineage(member_dir) or []]
    rows: list = []
    for g, start in enumerate(starts):
        metrics = os.path.join(member_dir, f"gen-{g}", "metrics.jsonl")
        if not os.path.isfile(metrics):  # a generation killed before its first row
            continue
        end = starts[g + 1] if g + 1 < len(starts) else float("inf")
        rows.extend(row for row in read_rows(metrics)
                    if isinstance(row.get("env_steps"), (int, float))
                    and (row["env_steps"] > start or g == 0) and row["env_steps"] <= end)
    return rows


def _lineage(member_dir: str) -> list | None:
    """The member's generations, or ``None`` (with one warning) when its lineage file cannot be read."""
    path = os.path.join(member_dir, LINEAGE_FILE)
    try:
        with open(path, encoding="utf-8") as f:
            lineage = json.load(f)
        if isinstance(lineage, list) and all(isinstance(g, dict) for g in lineage):
            return lineage
        problem = "it is not a list of generations"
    except (OSError, ValueError) as err:
        problem = str(err)
    print(f"rlengine: warning: cannot read {path!r} ({problem}); its generations are drawn as runs of their own",
          file=sys.stderr)
    return None
