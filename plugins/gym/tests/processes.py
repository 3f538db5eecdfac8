"""Which worker processes are alive below this test process (read from /proc)."""

import os


def worker_processes() -> set:
    """Pids of live descendants of this process, multiprocessing's own helpers left out.

    Env workers are forked by multiprocessing's forkserver, a child of ours that
    outlives every environment by design (as does the resource tracker); the
    workers share the forkserver's command line, so only the helpers themselves,
    our direct children, are left out.
    """
    parents, names = {}, {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                state, ppid = f.read().rsplit(")", 1)[1].split()[:2]
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                names[pid] = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # ended while we looked
            continue
        if state != "Z":
            parents[pid] = ppid
    me = str(os.getpid())
    found, frontier = set(), {me}
    while frontier:
        frontier = {pid for pid, ppid in parents.items() if ppid in frontier} - found
        found |= frontier
    helpers = {p for p in found if parents[p] == me and ("forkserver" in names[p] or "resource_tracker" in names[p])}
    return found - helpers
