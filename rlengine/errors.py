"""Errors meant for users: each renders as one line naming the culprit and the fix.

Every error class a user or a plugin catches is defined here (``__all__``, also exported by the
facade ``rlengine``), with :func:`one_line`, which plugins use to report any exception in one line.
The other helpers below make the core's messages.
"""

from __future__ import annotations

import difflib
from typing import Any, Iterable

__all__ = ["RLEngineError", "ConfigError", "PluginError", "RegistryError", "SpecMismatchError", "NonFiniteError",
           "TrainingInterrupted", "WorkerError", "StopRequested", "EnvironmentFault", "EnvironmentOutputMismatch",
           "NonFiniteObservation", "EnvironmentTimeout", "StateKeyError", "NotARunDirectory", "RunDirBusy",
           "CheckpointError", "CheckpointChoiceError", "DamagedCheckpointError", "CheckpointMismatchError",
           "DamagedSpecs", "LiteUnavailable", "one_line"]


class RLEngineError(Exception):
    """Base class. ``str(err)`` is the one-line message shown to the user."""


class ConfigError(RLEngineError):
    """A config key is unknown, ill-typed or out of range."""


class PluginError(RLEngineError):
    """A plugin failed to load, register or validate."""


class RegistryError(RLEngineError):
    """A name is unknown, registered twice, or registered with the wrong type."""


class SpecMismatchError(RLEngineError):
    """A plugin produced tensors that do not match the prepared specs."""


class NonFiniteError(RLEngineError):
    """Training produced non-finite losses, gradients or weights, again and again."""


class TrainingInterrupted(RLEngineError):
    """SIGINT or SIGTERM stopped training after a checkpoint was written.

    ``checkpoint`` is the checkpoint's path, or None when none could be written.
    """

    def __init__(self, signal_number: int, root_dir: str, checkpoint: "str | None"):
        import signal

        self.signal_number = signal_number
        self.root_dir = root_dir
        self.checkpoint = checkpoint
        self.signal_name = signal.Signals(signal_number).name
        saved = f"checkpoint saved to {checkpoint}" if checkpoint else "no checkpoint could be saved"
        super().__init__(f"training stopped by {self.signal_name}; {saved}")


class WorkerError(RLEngineError):
    """A thread of the asynchronous pipeline failed; names the thread and what it ran."""

    thread: str = ""  # the failed thread's name, set by of()

    @classmethod
    def of(cls, thread: str, what: str, error: BaseException) -> "WorkerError":
        first = telling_line(str(error))
        where = f"{thread} ({what})" if what else thread
        err = cls(f"{where} failed: {type(error).__name__}: {first}")
        err.__cause__ = error
        err.thread = thread
        return err


class StopRequested(RLEngineError):
    """A stop was requested while a long call (an evaluation) ran, so the call was given up."""


# -- environments -------------------------------------------------------------------------------
class EnvironmentFault(RLEngineError):
    """An environment failed beyond what restarts may repair."""


class EnvironmentOutputMismatch(EnvironmentFault, SpecMismatchError):
    """An environment returned arrays its ``time_step_spec()`` does not describe."""


class NonFiniteObservation(EnvironmentFault):
    """An environment returned NaN or infinity."""


class EnvironmentTimeout(EnvironmentFault):
    """An environment did not answer ``step`` or ``reset`` in time."""


class StateKeyError(RLEngineError):
    """The per-user key that signs saved environment state cannot be read or created."""


# -- the run directory, its checkpoints and its saved policy ------------------------------------
class NotARunDirectory(RLEngineError):
    """A directory given as a run directory is not one rlengine wrote: a file, a directory of other
    files (to train into), or one without a run's config (to load from)."""


class RunDirBusy(RLEngineError):
    """Another process is training into the run directory."""


class CheckpointError(RLEngineError):
    """No checkpoint of a run directory gives what was asked."""


class CheckpointChoiceError(CheckpointError):
    """The checkpoint asked for does not exist or is not a choice."""


class DamagedCheckpointError(CheckpointChoiceError):
    """A checkpoint's files do not match its marker or cannot be read: the one asked for, or (when a run
    resumes) every checkpoint of the run directory."""


class CheckpointMismatchError(CheckpointError):
    """A checkpoint TensorFlow reads whole was written by a run with another algorithm or network shape.

    ``checkpoint`` is its path prefix, ``difference`` the first difference found (one line).
    """

    def __init__(self, message: str, checkpoint: str = "", difference: str = ""):
        super().__init__(message)
        self.checkpoint, self.difference = checkpoint, difference


class DamagedSpecs(RLEngineError):
    """``specs.json`` exists but cannot be read back."""


class LiteUnavailable(RLEngineError):
    """``backend="tflite"`` was asked for, and the step cannot be converted (or disagrees with TensorFlow)."""


# -- the lines ----------------------------------------------------------------------------------
def telling_line(message: str) -> str:
    """The line of an error message that says what went wrong.

    TensorFlow's graph errors open with "Graph execution error:" and the
    node's traceback; the cause is the first unindented line after them.
    """
    lines = [line for line in message.strip().splitlines() if line.strip()]
    if lines and lines[0].startswith("Graph execution error"):
        causes = [line for line in lines[1:] if not line.startswith((" ", "\t", "Detected at node"))]
        lines = causes or lines
    return lines[0] if lines else ""


def one_line(error: BaseException) -> str:
    """An exception's message as one line that keeps its cause.

    TensorFlow's graph errors give the line that says what went wrong; a
    pluggy validation error gives every line joined (its last one says which
    argument the hook spec lacks); anything else its first line.
    """
    message = str(error).strip()
    if type(error).__name__ == "PluginValidationError":
        return "; ".join(line.strip() for line in message.splitlines() if line.strip())
    return telling_line(message)


def format_bytes(count: float) -> str:
    """``1536`` -> ``'1.5 KiB'``: sizes people read, in binary units (for messages)."""
    units = ["B", "KiB", "MiB", "GiB", "TiB"]
    power = 0
    while count >= 1024 and power < len(units) - 1:
        count, power = count / 1024, power + 1
    return f"{count:.0f} B" if power == 0 else f"{count:.1f} {units[power]}"


def close_matches(name: str, choices: Iterable[str]) -> str:
    """A ' Did you mean ...?' suffix, or '' when nothing is close."""
    matches = difflib.get_close_matches(name, list(choices), n=3, cutoff=0.5)
    if not matches:
        return ""
    return " Did you mean " + " or ".join(repr(m) for m in matches) + "?"


# -- the last resort: any other exception as one line -------------------------------------------
#: Packages under the engine and its plugins: a frame in them is never the culprit an error names.
_INFRASTRUCTURE = {"tensorflow", "keras", "tf_keras", "tensorflow_probability", "numpy", "gymnasium", "pluggy",
                   "attr", "attrs", "absl", "google", "cloudpickle", "tomli_w", "tomli"}
_DISK_FULL_FIX = ("free some disk space and run the same command again (complete checkpoints are kept: it resumes), "
                  "or choose another --root-dir on a disk with space")
_OS_ERROR_FIXES = {  # errno name -> what to do
    "ENOSPC": _DISK_FULL_FIX,
    "EDQUOT": _DISK_FULL_FIX,
    "EACCES": "check the permissions of that path or choose another one",
    "EPERM": "check the permissions of that path or choose another one",
    "EROFS": "that file system is read-only: choose a path on a writable one",
    "EEXIST": "a file is in the way: remove it or choose another path",
    "ENOTDIR": "a file is where a directory is expected: remove it or choose another path",
    "EISDIR": "a directory is where a file is expected: pass a file",
    "ENOENT": "check the path",
}


def unexpected_error_line(error: BaseException) -> str:
    """One line for an exception that is no :class:`RLEngineError`: what, its type, where, and the fix
    when the kind of error tells it (``rlengine: error: <this>``)."""
    if isinstance(error, OSError) and (error.strerror or error.filename):
        return os_error_line(error)
    what = one_line(error) or "(no message)"
    return f"{what} ({type(error).__name__} in {where_raised(error)}); --debug shows the traceback"


def os_error_line(error: OSError) -> str:
    """``No space left on device: 'runs/x/config.toml' (OSError in ...); free some disk space ...``."""
    import errno as errno_names

    paths = [repr(p) for p in (error.filename, error.filename2) if p is not None]
    what = f"{error.strerror or one_line(error)}: {' -> '.join(paths)}" if paths else (error.strerror or one_line(error))
    fix = _OS_ERROR_FIXES.get(errno_names.errorcode.get(error.errno or 0, ""), "")
    return (f"{what} ({type(error).__name__} in {where_raised(error)}); " + (f"{fix}; " if fix else "")
            + "--debug shows the traceback")


def where_raised(error: BaseException) -> str:
    """``module:line (function)`` of the innermost frame of the engine or a plugin that the error passed,
    with the distribution that installed it when that is not rlengine itself. For an error of a graph,
    the code that defined the failing op (its traceback only shows the graph being run)."""
    import sys

    defined = _graph_op_origin(str(error))
    if defined:
        return defined
    frames = []  # (frame, line), outermost first
    tb = error.__traceback__
    while tb is not None:
        frames.append((tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    if not frames:
        return "an unknown place"

    def ours(frame: Any) -> bool:
        top = str(frame.f_globals.get("__name__", "")).split(".")[0]
        return top not in _INFRASTRUCTURE and top not in sys.stdlib_module_names

    frame, line = next((f for f in reversed(frames) if ours(f[0])), frames[-1])
    module = str(frame.f_globals.get("__name__", "?"))
    dist = _distribution_of(module.split(".")[0])
    where = f"{module}:{line} ({frame.f_code.co_name})"
    return f"{where}, from {dist}" if dist and dist != "rlengine" else where


def _graph_op_origin(message: str) -> str:
    """``path:line (function)`` of the innermost frame of rlengine or a plugin in TensorFlow's
    ``Detected at node ... defined at (most recent call last):`` stack, or ''."""
    import os
    import re
    import sysconfig

    if "defined at (most recent call last)" not in message:
        return ""
    stdlib = sysconfig.get_paths()["stdlib"]
    frames = re.findall(r'File "([^"]+)", line (\d+), in (\S+)', message.split("defined at", 1)[1])
    library = os.sep + "site-packages" + os.sep
    for path, line, function in reversed(frames):
        parts = set(path.split(os.sep))
        if path.startswith(stdlib) and library not in path or parts & _INFRASTRUCTURE:
            continue
        shown = os.path.relpath(path) if path.startswith(os.getcwd() + os.sep) else path
        return f"{shown}:{line} ({function}), where the failing op was defined"
    return ""


def _distribution_of(package: str) -> str:
    import importlib.metadata

    try:
        names = importlib.metadata.packages_distributions().get(package) or []
    except Exception:  # broken metadata must not hide the error being reported
        return ""
    return names[0] if names else ""


def earlier_failures(error: BaseException) -> list:
    """Exceptions that were already failing the run when ``error`` was raised, earliest first.

    Python links them as ``__context__`` ("during handling of the above
    exception, another exception occurred"), e.g. an environment failure
    that ended the run and a ``train_end`` hook that raised in the cleanup.
    A deliberate translation sets ``__cause__`` (``raise ... from``) instead
    and is one failure, not two.
    """
    found: list = []
    seen = {id(error)}
    chain: list = [error]
    while chain:
        current = chain.pop()
        for linked, implicit in ((current.__cause__, False), (current.__context__, True)):
            if linked is None or id(linked) in seen:
                continue
            seen.add(id(linked))
            if implicit and not current.__suppress_context__ and linked is not current.__cause__:
                found.append(linked)
            chain.append(linked)
    return list(reversed(found))
