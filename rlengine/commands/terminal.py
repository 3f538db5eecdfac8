"""What the commands tell a person watching a terminal while a slow step runs."""

from __future__ import annotations

import sys


def say_on_a_terminal(line: str) -> None:
    """``line`` on stderr when a person watches it (a terminal): importing TensorFlow and building a run
    take seconds, and a blank terminal looks hung. Logs and pipes get only the results."""
    if sys.stderr.isatty():
        print(line, file=sys.stderr, flush=True)
