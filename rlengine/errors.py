"""Errors meant for users: each renders as one line naming the culprit and the fix."""

from __future__ import annotations

import difflib
from typing import Iterable


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


def close_matches(name: str, choices: Iterable[str]) -> str:
    """A ' Did you mean ...?' suffix, or '' when nothing is close."""
    matches = difflib.get_close_matches(name, list(choices), n=3, cutoff=0.5)
    if not matches:
        return ""
    return " Did you mean " + " or ".join(repr(m) for m in matches) + "?"
