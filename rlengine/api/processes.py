"""Child processes that end with the process that started them.

A command that starts ``rlengine train`` children (seeds, tune jobs, a Ray
worker's run) must not leave one training on when it is killed: the run
directory's lock would stay held, and the retry would find it busy::

    child = subprocess.Popen(argv, start_new_session=True, preexec_fn=dying_with_parent(signal.SIGINT))
"""

from __future__ import annotations

import signal
import sys
from typing import Callable, Optional

_PR_SET_PDEATHSIG = 1  # prctl(2)


def dying_with_parent(signum: int = signal.SIGTERM) -> Optional[Callable[[], None]]:
    """A ``preexec_fn`` by which the child is sent ``signum`` when its parent dies (Linux's
    ``PR_SET_PDEATHSIG``); None elsewhere, where no such request exists and the caller's own
    stopping is all there is."""
    if sys.platform != "linux":
        return None

    def request() -> None:  # pragma: no cover  (runs in the forked child, before exec)
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signum))

    return request
