"""TensorFlow imported without its C++ start-up chatter.

TensorFlow writes start-up messages to fd 2 before any logging is set up,
so no setting silences them all; ``RLENGINE_DEBUG=1`` keeps them. Every
subpackage that uses TensorFlow imports it through :func:`import_tensorflow`
in its ``__init__``, so commands that need no TensorFlow (``--version``,
``--help``, ``plugins``) never pay for it.

In the command line's own process (:func:`own_the_process`) the import also
runs without Python's garbage collector, see :func:`_collector_paused`.
"""

from __future__ import annotations

import contextlib
import gc
import os
import re
import signal
import sys
import tempfile
import threading
from typing import Iterator

#: Lines TensorFlow's C++ runtime writes at start-up: absl log lines ("I0000 00:00:...") and the
#: notice absl prints before its logging is initialised.
_START_UP_LINE = re.compile(r"^([IWE]\d{4} \d\d:\d\d:\d\d|WARNING: All log messages before absl::InitializeLog)")
#: Whether this process is the command line's (set by :func:`own_the_process`), not a user's program
#: that imported rlengine: only then may the import change how Python collects garbage.
_process_is_ours = False


def own_the_process() -> None:
    """Called by the command line when it runs as the process's program (the ``rlengine`` script)."""
    global _process_is_ours
    _process_is_ours = True


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Import without the cyclic garbage collector, then freeze what was imported (own process only).

    TensorFlow's import creates about half a million objects that live as long as the process. The
    collector, triggered by the allocations, walks them again and again as they come: a fifth of the
    import (docs/performance.md). Frozen afterwards (``gc.freeze``), later collections skip them too,
    the interpreter's last one at exit included.
    The few thousand cycles the import leaves behind (about 7,000 objects) are then never freed,
    which a process that lives for one command can afford; a user's program keeps its collector.
    """
    if not _process_is_ours or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


@contextlib.contextmanager
def quiet_stderr() -> Iterator[None]:
    """Send fd 2 to /dev/null: TensorFlow's C++ start-up messages are written there
    before any logging is set up, so no setting silences them. ``RLENGINE_DEBUG=1`` keeps them."""
    if os.environ.get("RLENGINE_DEBUG"):
        yield
        return
    saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    try:
        sys.stderr.flush()
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


@contextlib.contextmanager
def tensorflow_start_up_dropped() -> Iterator[None]:
    """Run the block with fd 2 captured; if it imported TensorFlow (a plugin module that imports it
    at the top), drop TensorFlow's start-up lines and pass every other line on to stderr."""
    if "tensorflow" in sys.modules or os.environ.get("RLENGINE_DEBUG"):
        yield
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        sys.stderr.flush()
        os.dup2(captured.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            lines = captured.read().decode(errors="replace").splitlines(keepends=True)
            imported = "tensorflow" in sys.modules
            sys.stderr.write("".join(line for line in lines if not (imported and _START_UP_LINE.match(line))))
            sys.stderr.flush()


def import_tensorflow() -> None:
    """Import TensorFlow (and TFP) quietly, once. No op runs here: the runtime starts when a run is
    built, sized for its pipeline (see :mod:`rlengine.run.process.runtime`)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if "tensorflow" in sys.modules:
        return
    # rlengine, its plugins and TFP build on tf-keras (Keras 2). Without this TensorFlow also imports
    # Keras 3 for ``tf.keras``, which nothing here uses: a quarter of the import
    # (``python benchmarks/startup.py --keras3-too``).
    # A user's own setting wins.
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    # TensorFlow's Keras imports matplotlib.pyplot when it is installed (for image
    # galleries rlengine never draws), which every start-up paid (docs/performance.md); its import is
    # guarded, so hide matplotlib until TensorFlow is in. Plotting imports it itself.
    hide_matplotlib = "matplotlib" not in sys.modules
    if hide_matplotlib:
        sys.modules["matplotlib"] = None  # type: ignore[assignment]
    try:
        with quiet_stderr(), _ctrl_c_stays_an_interruption(), _collector_paused():
            import tensorflow as tf
            import tensorflow_probability  # noqa: F401

            # Device discovery prints once (a failed cuInit on machines without a
            # GPU); it does not start the runtime, so the pool can still be sized.
            tf.config.list_physical_devices()
    finally:
        if hide_matplotlib and sys.modules.get("matplotlib", 0) is None:
            del sys.modules["matplotlib"]


@contextlib.contextmanager
def _ctrl_c_stays_an_interruption():
    """Ctrl-C while TensorFlow loads can surface as an ImportError from inside its import (seen on a
    loaded machine: "initialization failed"); it is an interruption, not a broken install."""
    interrupted: list = []
    in_main = threading.current_thread() is threading.main_thread()
    default = in_main and signal.getsignal(signal.SIGINT) is signal.default_int_handler  # keep an inherited SIG_IGN

    def on_sigint(signum: int, frame: object) -> None:
        interrupted.append(signum)
        raise KeyboardInterrupt

    if default:
        signal.signal(signal.SIGINT, on_sigint)
    try:
        yield
    except ImportError:
        if interrupted:
            raise KeyboardInterrupt from None
        raise
    finally:
        if default:
            signal.signal(signal.SIGINT, signal.default_int_handler)
