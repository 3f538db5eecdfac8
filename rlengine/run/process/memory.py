"""How much memory this process may still take, so big allocations are sized before they are made.

An allocation larger than the machine can give fails as an out-of-memory
traceback at best, and at worst gets the process (or a neighbour) killed by
the kernel. The limit is the smaller of the kernel's ``MemAvailable`` and,
inside a container, what its cgroup still allows; where neither can be read
(not Linux), ``os.sysconf``'s free pages; else unknown, and nothing is refused.
"""

from __future__ import annotations

import os
import sys
from typing import Optional

from rlengine.errors import ConfigError, format_bytes

#: Warn when one allocation would take more than this fraction of what is available.
WARN_FRACTION = 0.5

_CGROUP_LIMITS = (  # (limit, usage) files of cgroup v2, then v1
    ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
    ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"),
)


def _read_int(path: str) -> Optional[int]:
    try:
        with open(path) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):  # absent, unreadable, or "max" (no limit)
        return None


def _meminfo_available() -> Optional[int]:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024  # the kernel counts in kB
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cgroup_available() -> Optional[int]:
    for limit_file, usage_file in _CGROUP_LIMITS:
        limit, usage = _read_int(limit_file), _read_int(usage_file)
        if limit is not None and usage is not None and limit < 1 << 60:  # v1 writes "no limit" as ~2**63
            return max(limit - usage, 0)
    return None


def _sysconf_available() -> Optional[int]:
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):  # not POSIX, or the names are unknown here
        return None


def available_bytes() -> Optional[int]:
    """Bytes this process can still allocate without swapping or being killed; None when unknown."""
    known = [b for b in (_meminfo_available(), _cgroup_available()) if b is not None]
    if not known:
        known = [b for b in (_sysconf_available(),) if b is not None]
    return min(known) if known else None


def check_fits(needed: int, what: str, key: str, value: int, minimum: int = 1) -> None:
    """Refuse, in one line naming ``key``, an allocation of ``needed`` bytes that the machine cannot hold;
    warn when it would take over half of what is available. ``value`` is the key's setting and
    ``minimum`` its smallest allowed one, which the suggested setting never goes below."""
    available = available_bytes()
    if available is None or needed <= WARN_FRACTION * available:
        return
    figure = f"{key} = {value} needs {format_bytes(needed)} for {what}"
    fits = max(int(value * WARN_FRACTION * available // needed), minimum)  # the cost grows linearly with it
    if needed > available:
        raise ConfigError(f"{figure}, but only {format_bytes(available)} of memory is available; "
                          f"lower it to {fits} or less (half of that)")
    print(f"rlengine: warning: {figure}, over half of the {format_bytes(available)} of memory available; "
          f"lower it to {fits} or less to leave room for the rest", file=sys.stderr)
